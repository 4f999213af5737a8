// SubscribeToTask (spec 3.1.6): where a subscription starts, and how a stream that fell behind
// the replay buffer goes on from a fresh snapshot (docs/replay.md).
import { compareEventIds } from '../events/hub.ts';
import type { StreamPlan } from '../operations/stream-plan.ts';
import { A2AError, invalidParams, taskNotFound } from '../protocol/errors.ts';
import { isTerminal, type StreamResponse, type SubscribeToTaskRequest, type Task } from '../protocol/types.ts';
import { isBeforeBuffer } from '../store/replay-bound.ts';
import type { Owner, TaskRead, TaskStore } from '../store/task-store.ts';
import { replaySkipNote } from './replay-skip.ts';
import { completedRead, readTaskAnswer, readTaskPending, releaseLarge } from './task-answer.ts';

/** Where a subscription starts. */
export interface SubscriptionStart {
  snapshot: { task: Task; eventId: string } | undefined;
  /** Sent right after the snapshot, without an event id: the events the client skipped. */
  skipNote: StreamResponse | undefined;
  afterId: string;
  /** True when nothing can follow afterId: the stream should end right away. */
  terminal: boolean;
}

/**
 * Where a subscription starts. Without `lastEventId`: the current Task snapshot, then what
 * follows it (a terminal task is refused, spec 3.1.6). With it: exactly the events after
 * that id, even if the task has since ended, so a dropped client misses nothing; when some of
 * them were dropped from the replay buffer (replay settings), the current Task snapshot, a
 * note naming what was skipped (`skipNote`), then the events after the snapshot.
 */
export async function subscriptionStart(store: TaskStore, owner: Owner, request: SubscribeToTaskRequest, lastEventId: string | undefined, spliced = false): Promise<SubscriptionStart> {
  // A large task's artifacts are assembled off the event loop, and only when the snapshot is sent.
  const pending = await readTaskPending(store, owner, request.id, undefined);
  if (pending === undefined) throw taskNotFound(request.id);
  let assembling = false;
  const snapshotOf = async (): Promise<{ task: Task; eventId: string }> => {
    assembling = true;
    return { task: (await completedRead(pending, spliced)).task, eventId: pending.read.lastEventId };
  };
  try {
    return await startFrom(pending.read, request, lastEventId, snapshotOf);
  } finally {
    // A start without the snapshot (a resume inside the buffer, a refusal) lets its artifacts go.
    if (!assembling) releaseLarge(pending.large);
  }
}

async function startFrom(read: TaskRead, request: SubscribeToTaskRequest, lastEventId: string | undefined, snapshotOf: () => Promise<{ task: Task; eventId: string }>): Promise<SubscriptionStart> {
  const terminal = isTerminal(read.task.status.state);
  if (lastEventId !== undefined) {
    if (!/^\d+-\d+$/.test(lastEventId)) {
      throw invalidParams([{ field: 'Last-Event-ID', description: 'must be an event id this gateway sent, like 1700000000000-0' }]);
    }
    // Read with the snapshot, atomically: an id older than the newest dropped event misses some.
    if (isBeforeBuffer(lastEventId, read.trimmed)) {
      return { snapshot: await snapshotOf(), skipNote: replaySkipNote(read.task, read.lastEventId, lastEventId, read.trimmed), afterId: read.lastEventId, terminal };
    }
    const newest = read.lastEventId;
    if (newest !== '' && compareEventIds(lastEventId, newest) > 0) {
      throw invalidParams([{ field: 'Last-Event-ID', description: `is newer than the task's last event ${newest}` }]);
    }
    // The client already has the terminal event: nothing follows, so the stream ends at once.
    const caughtUp = terminal && newest !== '' && compareEventIds(lastEventId, newest) === 0;
    return { snapshot: undefined, skipNote: undefined, afterId: lastEventId, terminal: caughtUp };
  }
  if (terminal) {
    throw new A2AError(
      'UNSUPPORTED_OPERATION',
      `Task ${request.id} is already ${read.task.status.state}; there is nothing left to subscribe to. Use GetTask to read it.`,
      { metadata: { taskId: request.id, state: read.task.status.state } },
    );
  }
  return { snapshot: await snapshotOf(), skipNote: undefined, afterId: read.lastEventId, terminal };
}

/**
 * The owner's subscription: from its start to the task's terminal state, catching up past a
 * trimmed buffer. `spliced`: the binding writes snapshots through serializeFramed (Caller.answersSpliced).
 */
export async function subscribeToTask(store: TaskStore, owner: Owner, request: SubscribeToTaskRequest, lastEventId: string | undefined, spliced = false): Promise<StreamPlan> {
  const start = await subscriptionStart(store, owner, request, lastEventId, spliced);
  return {
    taskId: request.id,
    snapshot: start.snapshot,
    skipNote: start.skipNote,
    afterId: start.afterId,
    closesOn: isTerminal,
    alreadyEnded: start.terminal,
    snapshotAfterSkip: (after) => snapshotAfterSkip(store, owner, request.id, after, spliced),
  };
}

/**
 * For a stream whose reader fell behind the replay buffer (more events than the buffer holds
 * arrived while it caught up, e.g. across a Redis reconnect): the Task snapshot to continue
 * from and the note naming what was skipped, as a resume from before the buffer gets them.
 */
export async function snapshotAfterSkip(store: TaskStore, owner: Owner, taskId: string, lastEventId: string, spliced = false): Promise<{ snapshot: { task: Task; eventId: string }; skipNote: StreamResponse }> {
  const read = await readTaskAnswer(store, owner, taskId, undefined, spliced);
  if (read === undefined) throw taskNotFound(taskId);
  return { snapshot: { task: read.task, eventId: read.lastEventId }, skipNote: replaySkipNote(read.task, read.lastEventId, lastEventId, read.trimmed) };
}
