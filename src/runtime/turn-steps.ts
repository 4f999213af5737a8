// ctx.step(): a side effect journalled per turn, so an attempt that takes the turn over after a
// crash gets the step's result (done), or hears that its effect is unknown (started, then lost)
// instead of running it a second time.
import type { StepHandle, StepOutcome } from '../../adapters/types.ts';
import type { JsonValue } from '../protocol/types.ts';
import type { StepRecord, TaskStore } from '../store/task-store.ts';
import type { TurnWriteQueue } from './turn-write-queue.ts';

/** What a step is journalled under and with. */
export interface StepJournal {
  store: TaskStore;
  queue: TurnWriteQueue;
  taskId: string;
  generation: number;
  turn: number;
  attempt: number;
  /** The turn's abort: a step it cuts off stays started (its effect unknown). */
  signal: AbortSignal;
}

export async function runJournalledStep<T extends JsonValue>(journal: StepJournal, name: string, run: (handle: StepHandle) => Promise<T>): Promise<StepOutcome<T>> {
  const { store, queue, taskId, generation } = journal;
  const field = `${journal.turn}:${name}`;
  const record: StepRecord = {
    name,
    turn: journal.turn,
    idempotencyKey: `${taskId}:${journal.turn}:${name}`,
    state: 'started',
    attempt: journal.attempt,
    startedAtMs: Date.now(),
  };
  const journalled = await queue.enqueueValue(() => store.turns.startStep(taskId, generation, field, record));
  if (journalled !== undefined && journalled.state === 'done') return { status: 'done', value: journalled.value as T, replayed: true };
  if (journalled !== undefined && (journalled.state === 'started' || journalled.state === 'unknown')) {
    if (journalled.state === 'started') {
      // Journal that the unknown was handed over, so operators see it was not forgotten.
      const surfaced: StepRecord = { ...journalled, state: 'unknown', surfacedToAttempt: journal.attempt };
      await queue.enqueue(() => store.turns.writeStep(taskId, generation, field, surfaced));
    }
    return {
      status: 'unknown',
      idempotencyKey: journalled.idempotencyKey,
      reference: journalled.reference,
      startedAt: new Date(journalled.startedAtMs).toISOString(),
    };
  }
  if (journalled !== undefined) {
    // A failed step is known not to have succeeded: this attempt runs it again.
    await queue.enqueue(() => store.turns.writeStep(taskId, generation, field, record));
  }
  const handle: StepHandle = {
    idempotencyKey: record.idempotencyKey,
    recordReference: (reference) => {
      record.reference = reference;
      return queue.enqueue(() => store.turns.writeStep(taskId, generation, field, { ...record }));
    },
  };
  let value: T;
  try {
    value = await run(handle);
  } catch (error) {
    // Cut off by the turn's abort (a shutdown handing the turn back, a cancel, the deadline, an
    // interrupt), the step may well have had its effect (a request already sent): it is not
    // known to have failed. It stays started, so the attempt that takes the turn over gets it
    // as unknown to reconcile, exactly as after a crash, instead of running it again.
    if (journal.signal.aborted) throw error;
    const failed: StepRecord = { ...record, state: 'failed', finishedAtMs: Date.now(), error: (error as Error).message ?? String(error) };
    await queue.enqueue(() => store.turns.writeStep(taskId, generation, field, failed));
    throw error;
  }
  const done: StepRecord = { ...record, state: 'done', finishedAtMs: Date.now(), value };
  await queue.enqueue(() => store.turns.writeStep(taskId, generation, field, done));
  return { status: 'done', value, replayed: false };
}
