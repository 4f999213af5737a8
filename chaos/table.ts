// The table `npm run chaos` prints: the counts of report.ts, the must-be-zero rows in capitals,
// then the evidence (task ids, keys, stream problems) behind any non-zero one.
import type { ChaosPushResult } from './push-report.ts';
import type { ChaosResult } from './report.ts';

function pushRows(p: ChaosPushResult): [string, string, string][] {
  const misbehaviour = Object.entries(p.misbehaviour).map(([kind, n]) => `${kind} ×${n}`).join(', ') || 'none';
  return [
    ['push tasks / configs', `${p.tasks} / ${p.configs}`, `${p.configsOnSend} on SendMessage, ${p.configsCreated} by CreateTaskPushNotificationConfig`],
    ['push receivers', p.receivers, `${p.outages.count} outages (port closed, ${(p.outages.downMs / 1000).toFixed(1)} s in all); flaky answers: ${misbehaviour}`],
    ['push events to deliver', String(p.expected), "every event of each config's task (a created config: from when it was added), from the replay buffer"],
    ['push requests / accepted', `${p.requests} / ${p.accepted}`, `${p.redeliveries} redeliveries under the same webhook-id (allowed)`],
    ['LOST DELIVERIES', String(p.lost), 'must be 0 (an event neither accepted nor dead-lettered)'],
    ['OUT-OF-ORDER DELIVERIES', String(p.outOfOrder), 'must be 0 (per task and config)'],
    ['DUPLICATES WITH A NEW ID', String(p.newIdDuplicates), 'must be 0 (one event under two webhook-ids)'],
    ['IDS WITH TWO BODIES', String(p.idsWithTwoBodies), 'must be 0'],
    ['UNEXPECTED DELIVERIES', String(p.unexpected), "must be 0 (not an event of the config's task, or from before the config)"],
    ['BAD SIGNATURES', String(p.badSignatures), 'must be 0 (Standard Webhooks v1a, and v1 for HMAC configs)'],
    ['WRONG HEADERS', String(p.wrongHeaders), 'must be 0 (Content-Type application/a2a+json, token or Authorization as configured)'],
    ['push dead letters', String(p.deadLetters), 'from ListPushDeadLetters; expected only where a receiver answered 400'],
    ['UNEXPLAINED DEAD LETTERS', String(p.unexplainedDeadLetters), 'must be 0 (dead-lettered although never refused)'],
    ['PUSH REGISTRATION FAILURES', String(p.registrationFailures), 'must be 0 (CreateTaskPushNotificationConfig never succeeded)'],
    ['push settle', `${(p.settleMs / 1000).toFixed(1)} s`, 'from every task terminal to every delivery accepted or dead-lettered'],
  ];
}

const killsOf = (r: ChaosResult): number => r.faults.workerKills + r.faults.gatewayKills + r.faults.redisRestarts + r.faults.masterKills;

/** The table printed at the end of `npm run chaos`. */
export function formatReport(r: ChaosResult): string {
  const retries = Object.entries(r.retries).map(([cause, n]) => `${cause} ×${n}`).join(', ') || 'none';
  const rows: [string, string, string][] = [
    ['seed', String(r.seed), ''],
    ['tasks requested', String(r.tasksRequested), 'SendMessage "transfer <1..5>", returnImmediately'],
    ['tasks submitted', String(r.submitted), 'ids returned to the client'],
    ['completed', String(r.completed), ''],
    ['failed (with reason)', String(r.failed), Object.entries(r.failedReasons).map(([why, n]) => `${n}× ${why}`).join(' | ')],
    ['other terminal', String(Object.values(r.otherTerminal).reduce((a, b) => a + b, 0)), Object.keys(r.otherTerminal).join(' | ')],
    ['LOST', String(r.lost), 'must be 0'],
    ['orphan tasks', String(r.orphans), 'stored, but no client got the id'],
    ['submissions abandoned / refused', `${r.abandoned} / ${r.refused.length}`, ''],
    ['submission retries', String(Object.values(r.retries).reduce((a, b) => a + b, 0)), retries],
    ['slowest SendMessage', `${r.slowestRequestMs} ms`, 'one request, returnImmediately (the client gives up at 10 s)'],
    ['ledger charges', String(r.ledgerLines), r.coordinatorsRequested > 0 ? `${r.childLedgerLines} by coordinators' child tasks` : ''],
    ['LEDGER DUPLICATES', String(r.duplicates), 'must be 0 (same key twice)'],
    ['DOUBLE CHARGES', String(r.doubleCharges), 'must be 0 (charge-i and charge-i-again both charged)'],
    ['missing charges', String(r.missingCharges), 'completed transfers (load and child tasks) lacking a ledger line'],
    ['unknown steps reconciled', String(r.unknownSteps), `journal state 'unknown'; reports: ${r.reconciledCharged} found charged, ${r.recharged} charged again`],
    ['unknown to its own attempt', String(r.selfUnknownSteps), 'a step re-started by a re-sent command after a Redis crash'],
    ['REPLAY-BUFFER DUPLICATES', String(r.bufferDuplicates), 'must be 0 (the same event stored twice)'],
    ['SSE streams watched / checked', `${r.streamsWatched} / ${r.streamsChecked}`, `${r.streamsSkipped} skipped (task ended before subscribing)`],
    ['SSE resumes checked', String(r.resumes), `${r.streamsResumed} streams resumed, ${r.resumesElsewhere} on another gateway, ${r.streamErrorFrames} error frames before a drop`],
    ['SSE MISMATCHED', String(r.mismatched), 'must be 0'],
    ['anchor dialogues completed', `${r.anchorsCompleted} / ${r.anchors}`, 'long-lived streams across every fault'],
    ['coordinators submitted', `${r.coordinatorsSubmitted} / ${r.coordinatorsRequested}`, 'fanout: 3 × "transfer <1..3>" sub-agents, maxParallel 2, no review'],
    ['coordinators completed', String(r.coordinatorsCompleted), 'COMPLETED, combined artifact says completed = 3'],
    ['coordinators failed (with reason)', String(r.coordinatorsFailed), [r.coordinatorsUnexplained > 0 ? `${r.coordinatorsUnexplained} WITHOUT A REASON (must be 0)` : '', ...Object.entries(r.coordinatorFailedReasons).map(([why, n]) => `${n}× ${why}`)].filter((x) => x !== '').join(' | ')],
    ['assignments completed', `${r.assignmentsCompleted} / ${r.assignmentsListed}`, ['child tasks listed by GET /tasks/{id}/assignments', ...Object.entries(r.assignmentFailedReasons).map(([why, n]) => `${n}× ${why}`)].join(' | ')],
    ['LOST COORDINATORS', String(r.lostCoordinators), 'must be 0'],
    ['LOST CHILD TASKS', String(r.lostChildren), 'must be 0 (listed assignments missing or not terminal)'],
    ['COORDINATOR PROBLEMS', String(r.coordinatorProblems.length), 'must be 0 (listing failed, or disagrees with the combined artifact)'],
    ['STRAY CHILD CHARGES', String(r.strayChildCharges), `must be 0 (ledger lines of ${r.strayChildren} child tasks no coordinator lists)`],
    ...(r.backends === undefined
      ? []
      : ([
          ['remote tasks completed', `${r.backends.remoteCompleted} / ${r.backends.remoteSubmitted}`, 'agent "remote": a real downstream A2A agent (official SDK server), streamed artifact'],
          ['model tasks completed', `${r.backends.modelCompleted} / ${r.backends.modelSubmitted}`, 'agent "model": a local OpenAI-compatible server, streamed reply'],
          ['backend failures (with reason)', String(Object.values(r.backends.failedReasons).reduce((a, b) => a + b, 0)), Object.entries(r.backends.failedReasons).map(([why, n]) => `${n}× ${why}`).join(' | ')],
          ['LOST REMOTE / MODEL TASKS', String(r.backends.lost), 'must be 0'],
          ['WRONG RESULTS', String(r.backends.wrongResults.length), 'must be 0 (a spliced, partial or missing reply)'],
          ['DUPLICATE DOWNSTREAM SENDS', String(r.backends.downstreamDuplicates.length), 'must be 0 (the downstream agent got a message twice)'],
        ] as [string, string, string][])),
    ...(r.push === undefined ? [] : pushRows(r.push)),
    ...(r.generations === undefined
      ? []
      : ([
          ['generation samples', `${r.generations.samples} of ${r.generations.tasksSampled} tasks`, `GetTask with the task-generations extension on random gateways; ${r.generations.failedReads} reads failed under the faults`],
          ['GENERATIONS GONE BACK', String(r.generations.wentBack.length), 'must be 0 (a later sample of a task showed a lower generation)'],
          ['GENERATIONS REPEATED', String(r.generations.repeated.length), 'must be 0 (one generation showed two different tasks)'],
          ['GENERATION MISMATCHES', String(r.generations.finalMismatches.length), 'must be 0 (stored below a sample, or a transfer not at its count of announced events)'],
        ] as [string, string, string][])),
    ['worker kills (SIGKILL)', String(r.faults.workerKills), ''],
    ['gateway kills (SIGKILL)', String(r.faults.gatewayKills), ''],
    ['Redis', '', r.redisSetup],
    ...(r.faults.masterKills > 0
      ? ([['Redis master kills (SIGKILL)', String(r.faults.masterKills), `each failed over to its replica (slowest ${(r.faults.slowestFailoverMs / 1000).toFixed(1)} s), then back as a new node replicating it`]] as [string, string, string][])
      : ([['Redis restarts (SIGKILL)', String(r.faults.redisRestarts), 'appendonly yes, appendfsync always']] as [string, string, string][])),
    ['process kills in all', String(killsOf(r)), `${Math.round((killsOf(r) * 3_600_000) / Math.max(1, r.durationMs))} an hour at this run's rate (workers, gateways, Redis)`],
    ['unexpected process exits', String(r.unexpectedExits.length), r.unexpectedExits.map((e) => `${e.name} ${e.how}`).join(', ')],
    ['duration', `${(r.durationMs / 1000).toFixed(1)} s`, ''],
    ['RESULT', r.ok ? 'PASS' : 'FAIL', ''],
  ];
  const w0 = Math.max(...rows.map((row) => row[0].length));
  const w1 = Math.max(...rows.map((row) => row[1].length));
  const lines = rows.map(([a, b, c]) => `${a.padEnd(w0)}  ${b.padStart(w1)}  ${c}`.trimEnd());
  const details: string[] = [];
  const list = (title: string, items: string[]): void => {
    if (items.length === 0) return;
    details.push(`${title}:`);
    for (const item of items.slice(0, 20)) details.push(`  ${item}`);
    if (items.length > 20) details.push(`  ... and ${items.length - 20} more`);
  };
  list('lost tasks', r.lostTasks.map((t) => `${t.taskId}: ${t.why}`));
  list('lost remote / model tasks', r.backends?.lostTasks.map((t) => `${t.taskId}: ${t.why}`) ?? []);
  list('wrong results', r.backends?.wrongResults.map((t) => `${t.taskId}: ${t.problem}`) ?? []);
  list('duplicate downstream sends', r.backends?.downstreamDuplicates ?? []);
  list('lost coordinators', r.lostCoordinatorTasks.map((t) => `${t.taskId}: ${t.why}`));
  list('coordinators ended without a reason', r.coordinatorsUnexplainedList.map((t) => `${t.taskId}: ${t.why}`));
  list('lost child tasks', r.lostChildTasks.map((t) => `${t.taskId}: ${t.why}`));
  list('coordinator problems', r.coordinatorProblems.map((p) => `${p.taskId}: ${p.problem}`));
  list('stray child tasks', r.strayChildTasks);
  list('duplicate ledger keys', r.duplicateKeys);
  list('double charges', r.doubleChargeKeys);
  list('generations gone back', r.generations?.wentBack ?? []);
  list('generations repeated', r.generations?.repeated ?? []);
  list('generation mismatches', r.generations?.finalMismatches ?? []);
  list('stream mismatches', r.mismatches.map((m) => `${m.taskId}: ${m.problem}`));
  list('replay-buffer duplicates', r.bufferDuplicateTasks);
  list('steps unknown to their own attempt', r.selfUnknownKeys);
  list('push problems', r.push?.problems ?? []);
  list('refused submissions', r.refused.map((x) => `${x.messageId}: ${x.answer}`));
  list('unexpected exits', r.unexpectedExits.map((e) => `${e.name} (${e.how}), log ${e.logFile}`));
  return [...lines, ...(details.length > 0 ? ['', ...details] : [])].join('\n');
}
