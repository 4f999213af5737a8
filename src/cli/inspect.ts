// `a2a-gateway tasks inspect <taskId>`: what an operator needs to explain a task, as text
// (or --json). The reading is shared with the operator console (src/operator/task-inspection.ts).
import type { TaskInspection } from '../operator/task-inspection.ts';

export { inspectTask, type TaskInspection } from '../operator/task-inspection.ts';

export function formatInspection(t: TaskInspection): string {
  const lines = [
    `task       ${t.taskId}`,
    `state      ${t.state}`,
    `owner      ${t.owner}${t.tenant ? ` (tenant ${t.tenant})` : ''}`,
    `context    ${t.contextId}`,
    `created    ${t.createdAt ?? '-'}   updated ${t.updatedAt ?? '-'}   finished ${t.finishedAt ?? '-'}`,
    `versions   gateway ${t.versions?.gateway ?? '?'}, adapter ${t.versions?.adapter ?? '?'}, card ${t.versions?.card ?? '?'}`,
    `lease      ${t.lease.holder === undefined ? 'free' : `held by ${t.lease.holder}, ${t.lease.expiresInMs} ms left`} (generation ${t.lease.generation})`,
    `current    turn ${t.currentTurn.turn}: attempts ${t.currentTurn.attempts}, handed back ${t.currentTurn.handBacks}, budget spent ${t.currentTurn.budgetSpent}`,
    `output     ${t.output.taskBytes} bytes stored by the task, ${t.output.turnBytes} by its current turn`,
    `lost       ${t.lostWorkers.length === 0 ? 'no worker' : t.lostWorkers.map((w) => `${w.workerId} (turn ${w.turn}, attempt ${w.attempt}, ${new Date(w.atMs).toISOString()})`).join(', ')}`,
    `cancel     ${t.cancelRequestedAt === undefined ? 'not requested' : `requested at ${t.cancelRequestedAt}`}`,
    `history    ${t.historyMessages} messages, ${t.queuedMessages} queued for the next turn`,
    `events     ${t.events.count} in the replay buffer${t.events.count > 0 ? ` (${t.events.first} .. ${t.events.last})` : ''}${
      t.events.trimmed === undefined ? '' : `; ${t.events.trimmed.count} older ones trimmed (through ${t.events.trimmed.throughId})`
    }`,
    `expires    ${t.expiresInSeconds === undefined ? 'never (still open)' : `in ${t.expiresInSeconds} s`}`,
    `turns      ${t.turns.length}${t.parked ? ' (the current one is parked, waiting for its assignments)' : ''}`,
  ];
  if (t.coordinator !== undefined) {
    lines.splice(4, 0, `assigned   by coordinator ${t.coordinator.taskId} as role ${t.coordinator.role}${t.coordinator.readOnly ? ' (read-only reviewer)' : ''}`);
  }
  for (const turn of t.turns) {
    lines.push(
      `  turn ${turn.turn}: ${turn.outcome ?? 'open'}, attempts ${turn.attempts ?? 0}${turn.handBacks ? `, handed back ${turn.handBacks}` : ''}${
        turn.budgetSpent !== undefined || turn.budgetLimit !== undefined ? `, budget ${turn.budgetSpent ?? 0}${turn.budgetLimit === undefined ? '' : ` of ${turn.budgetLimit}`}` : ''
      }, worker ${turn.workerId ?? '-'}, adapter ${turn.adapter ?? '-'}`,
    );
    if (turn.reason !== undefined) lines.push(`    reason: ${turn.reason}`);
    if (turn.startedAtMs !== undefined) lines.push(`    started ${new Date(turn.startedAtMs).toISOString()}${turn.finishedAtMs ? `, finished ${new Date(turn.finishedAtMs).toISOString()}` : ''}`);
    for (const step of turn.steps ?? []) lines.push(`    step ${step.name} (attempt ${step.attempt}) at ${new Date(step.atMs).toISOString()}`);
  }
  if (t.journal.length > 0) lines.push(`journal    ${t.journal.length} steps, ${t.journal.filter((s) => s.unknown).length} unknown`);
  for (const step of t.journal) {
    lines.push(
      `  ${step.turn}:${step.name} ${step.unknown ? `UNKNOWN (started in attempt ${step.attempt}, no result${step.surfacedToAttempt ? `; handed to attempt ${step.surfacedToAttempt} to reconcile` : ''})` : `${step.state} (attempt ${step.attempt})`}, key ${step.idempotencyKey}${step.reference ? `, reference ${step.reference}` : ''}`,
    );
  }
  if (t.assignments.length > 0) lines.push(`assignments ${t.assignments.length}`);
  for (const a of t.assignments) {
    lines.push(
      `  ${a.delegation}[${a.index}] ${a.role}${a.kind === 'review' ? ' (reviewer)' : ''}: ${a.state}, task ${a.taskId}${a.grantSeq === undefined ? '' : `, started #${a.grantSeq}`}${a.question ? `, asks: ${a.question}` : ''}`,
    );
  }
  return lines.join('\n');
}
