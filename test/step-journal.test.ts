// Invariant 4 (unknown is not never): side-effecting steps run through ctx.step are journalled
// as started before they run and with their result after; after a worker is killed mid-turn,
// the recovering attempt gets completed steps' results without re-running them, and a step
// found started-without-result as `unknown`, never replayed blindly. Measured on a ledger that
// stands in for a payment system: no charge may appear twice.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatInspection, inspectTask } from '../src/cli/inspect.ts';
import { TurnContext } from '../src/runtime/turn-context.ts';
import { ownerKeyOf, StaleLeaseError, TaskStore, type StepRecord } from '../src/store/task-store.ts';
import { createStoredTask, rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';

const ledgerFile = join(mkdtempSync(join(tmpdir(), 'a2a-ledger-')), 'ledger.txt');
const adapterEnv = (stepMs: number) => ({
  A2A_ADAPTER: 'test/fixtures/ledger-adapter.mjs',
  A2A_ADAPTER_OPTIONS: JSON.stringify({ ledgerFile, stepMs }),
});

let gw: TestGateway;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  gw = await startTestGateway({
    name: 'steps',
    inProcessWorker: false,
    config: { adapter: 'test/fixtures/ledger-adapter.mjs', adapterOptions: { ledgerFile, stepMs: 300 } },
  });
});

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL');
  await gw?.close();
});

const ledgerLines = (): string[] => {
  try {
    return readFileSync(ledgerFile, 'utf8').split('\n').filter((line) => line !== '');
  } catch {
    return [];
  }
};

/**
 * A stored task of its own (`name`), and turn contexts for it: `lease(workerId)` takes its lease
 * as a new worker would after the previous one is gone, `contextFor` is attempt `attempt`'s
 * context of turn 1 under that lease's generation.
 */
async function journalTask(name: string) {
  const store = new TaskStore(gw.redis, gw.prefix);
  const owner = { agent: 'default', tenant: '', subject: name };
  const taskId = `${name}-task`;
  const contextId = `${name}-ctx`;
  await createStoredTask(store, { taskId, contextId, owner, text: 'x', messageId: `${name}-m`, adapter: 'ledger@1.0.0' });
  const lease = async (workerId: string) => {
    await gw.redis.del(store.keys.task(taskId).lease); // the previous worker is gone
    const acquired = await store.turns.acquireLease({ taskId, ownerKey: ownerKeyOf(owner), contextId, workerId, leaseTtlMs: 60_000, now: new Date() });
    if (acquired.kind !== 'acquired') throw new Error(acquired.kind);
    return acquired;
  };
  const contextFor = (generation: number, attempt: number, signal = new AbortController().signal) =>
    new TurnContext({
      store,
      lease: { taskId, contextId, ownerKey: ownerKeyOf(owner), generation },
      turn: 1,
      attempt,
      input: [],
      history: [],
      artifacts: [],
      requestedSkill: undefined,
      signal,
      turnRecord: { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now() },
      adapterName: 'ledger',
      emitScope: '1.0',
      caller: { agent: 'default', tenant: '', principal: 'journal', scopes: [] },
    });
  return { store, taskId, lease, contextFor };
}

describe('the step journal through the adapter context', () => {
  it('runs a step once, replays its result, hands an unfinished one over as unknown, and is fenced [guarantee:turn.steps-once]', async () => {
    const { store, taskId, lease, contextFor } = await journalTask('journal');

    const first = contextFor((await lease('w1')).generation, 1);
    let runs = 0;
    const done = await first.step('charge', async ({ idempotencyKey }) => {
      runs += 1;
      expect(idempotencyKey).toBe(`${taskId}:1:charge`);
      return { receipt: 'r-1' };
    });
    expect(done).toEqual({ status: 'done', value: { receipt: 'r-1' }, replayed: false });
    // Attempt 1 is lost inside the second step, after it recorded a reference.
    const lost = first.step('refund', async ({ recordReference }) => {
      await recordReference('refund-42');
      return new Promise<never>(() => undefined);
    });
    await waitFor(async () => ((await store.turns.readSteps(taskId))['1:refund']?.reference === 'refund-42' ? true : undefined), 5_000, 'the reference');
    void lost;

    const second = contextFor((await lease('w2')).generation, 2);
    const replayed = await second.step('charge', async () => {
      runs += 1;
      return { receipt: 'r-2' };
    });
    expect(replayed).toEqual({ status: 'done', value: { receipt: 'r-1' }, replayed: true });
    const unknown = await second.step('refund', async () => {
      throw new Error('an unknown step must not run again');
    });
    expect(unknown).toMatchObject({ status: 'unknown', idempotencyKey: `${taskId}:1:refund`, reference: 'refund-42' });
    expect(runs).toBe(1);
    const journal = await store.turns.readSteps(taskId);
    expect(journal['1:refund']).toMatchObject({ state: 'unknown', attempt: 1, surfacedToAttempt: 2 } satisfies Partial<StepRecord>);

    // The replaced worker cannot journal anything any more.
    await expect(first.step('late', async () => 1)).rejects.toBeInstanceOf(StaleLeaseError);
    expect((await store.turns.readSteps(taskId))['1:late']).toBeUndefined();
  });
});

describe('a step cut off by the turn\'s abort', () => {
  it('is handed to the next attempt as unknown, not journalled failed and run again; a step that threw by itself is', async () => {
    const { store, taskId, lease, contextFor } = await journalTask('journal-abort');

    // Attempt 1: one step fails on its own, another is in flight (its request sent) when the
    // worker shuts down and aborts the turn.
    const shutdown = new AbortController();
    const first = contextFor((await lease('w1')).generation, 1, shutdown.signal);
    await expect(first.step('refused', async () => Promise.reject(new Error('the payment system said no')))).rejects.toThrow('said no');
    let sent = 0;
    const inFlight = first.step('send', ({ recordReference }) => {
      sent += 1;
      void recordReference;
      return new Promise<never>((_, reject) => shutdown.signal.addEventListener('abort', () => reject(shutdown.signal.reason as Error)));
    });
    await waitFor(async () => ((await store.turns.readSteps(taskId))['1:send']?.state === 'started' ? true : undefined), 5_000, 'the send step journalled');
    shutdown.abort(new DOMException('The worker is shutting down', 'AbortError'));
    await expect(inFlight).rejects.toThrow('shutting down');
    expect((await store.turns.readSteps(taskId))['1:send']).toMatchObject({ state: 'started', attempt: 1 } satisfies Partial<StepRecord>);

    // Attempt 2 (the worker that takes the turn over): the cut-off step is unknown, the refused one runs again.
    const second = contextFor((await lease('w2')).generation, 2);
    const send = await second.step('send', async () => {
      sent += 1;
      return 'sent twice';
    });
    expect(send).toMatchObject({ status: 'unknown', idempotencyKey: `${taskId}:1:send` });
    expect(sent).toBe(1);
    const refused = await second.step('refused', async () => 'accepted this time');
    expect(refused).toEqual({ status: 'done', value: 'accepted this time', replayed: false });
  });
});

describe('a worker killed mid-step', () => {
  it('never charges twice: completed steps are replayed, the interrupted one reconciled, the rest run once [guarantee:turn.steps-once]', async () => {
    const first = await spawnWorkerProcess(gw.prefix, adapterEnv(300));
    workers.push(first);
    const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('transfer 6'), configuration: { returnImmediately: true } });
    const taskId = ((reply.body.result as { task: { id: string } }).task).id;
    // Kill inside the crash window of step 3: its charge is in the ledger and its reference
    // journalled, its result is not (the step pauses after recording the reference).
    const journal = new TaskStore(gw.redis, gw.prefix);
    await waitFor(async () => ((await journal.turns.readSteps(taskId))['1:charge-3']?.reference !== undefined ? true : undefined), 30_000, 'the third charge');
    expect(ledgerLines().some((line) => line.endsWith(':charge-3'))).toBe(true);
    first.kill('SIGKILL');
    await first.exited;
    const second = await spawnWorkerProcess(gw.prefix, adapterEnv(50));
    workers.push(second);

    const task = await waitFor(async () => {
      const current = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { status: { state: string }; artifacts?: { parts: { text: string }[] }[] };
      return current.status.state === 'TASK_STATE_COMPLETED' ? current : undefined;
    }, 45_000, 'the recovered turn to complete');

    const charges = ledgerLines().filter((line) => line.startsWith(`${taskId}:`));
    expect(new Set(charges).size).toBe(charges.length); // no charge twice
    expect(charges).toEqual([1, 2, 3, 4, 5, 6].map((i) => `${taskId}:1:charge-${i}`));
    const report = task.artifacts?.[0]?.parts[0]?.text ?? '';
    expect(report).toContain('charge-1: replayed');
    expect(report).toContain('charge-3: unknown, reconciled as charged (ledger:');
    expect(report).toContain('charge-6: charged');

    const inspection = await inspectTask(gw.redis, gw.prefix, taskId);
    expect(inspection?.turns[0]?.attempts).toBe(2);
    expect(inspection?.journal.filter((s) => s.unknown).map((s) => s.name)).toEqual(['charge-3']);
    expect(formatInspection(inspection as NonNullable<typeof inspection>)).toMatch(/1:charge-3 UNKNOWN \(started in attempt 1, no result; handed to attempt 2 to reconcile\)/);
  });
});
