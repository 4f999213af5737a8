// A task's events as the use cases and the faces consume them: followed from a point (streams),
// watched until a turn ends (blocking SendMessage, CancelTask), or every task's live (operators).
// The one holder of the event hub among the use cases.
import { A2AError } from '../protocol/errors.ts';
import type { TaskState } from '../protocol/types.ts';
import { compareEventIds, type EventHub, type LiveEvent } from '../events/hub.ts';
import { HELD_CHARS_MAX, HELD_EVENTS_MAX, holdTaskFeed, type HeldTaskFeed } from '../events/held-feed.ts';
import { openTaskFeed, type TaskFeed } from '../events/task-feed.ts';
import type { TaskStore } from '../store/task-store.ts';
import { taskReadOfAnswer, type TaskRead } from '../store/task-read.ts';
import type { TaskFollower } from './a2a-handler.ts';

/** A wait for the end of a turn: resolves with the task when the event that ended it carried it. */
export interface TurnWatch {
  done: Promise<TaskRead | undefined>;
  cancel(): void;
}

export class TaskEvents {
  constructor(
    private readonly hub: EventHub,
    private readonly store: TaskStore,
  ) {}

  follow(follower: TaskFollower): TaskFeed {
    const { held, ...consumer } = follower;
    if (held !== undefined && held.taskId === follower.taskId) return held.attach(consumer);
    held?.close();
    return openTaskFeed({ hub: this.hub, store: this.store, ...consumer });
  }

  /**
   * Watches a task about to be created, holding its events until a stream attaches
   * (src/events/held-feed.ts): that stream needs no read of the replay buffer.
   */
  holdNewTask(taskId: string): HeldTaskFeed {
    return holdTaskFeed(this.hub, this.store, taskId);
  }

  /** False where no one subscription hears every task (Redis Cluster, sharded pub/sub). */
  get watchesEveryTask(): boolean {
    return this.hub.watchesEveryTask;
  }

  /** Every task's events, live only; returns the function that stops listening. */
  watchEveryTask(onEvent: (event: LiveEvent) => void, onGap: () => void, onLost: (error: Error) => void): () => void {
    return this.hub.listenToEveryTask(onEvent, onGap, onLost);
  }

  /** Resolves at the first status event after `afterId` whose state satisfies `done`, or at the timeout. */
  waitForTurnEnd(taskId: string, afterId: string, timeoutMs: number, done: (state: TaskState) => boolean): Promise<void> {
    return this.watchTurnEnd(taskId, afterId, timeoutMs, done, false).done.then(() => undefined);
  }

  /**
   * Resolves at the first event after `afterId` (any kind), or at the timeout. A failed feed
   * (Redis unreachable) ends the wait too: the caller reads the task again, and that read fails
   * or answers as it is.
   */
  waitForEventAfter(taskId: string, afterId: string, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        feed.close();
        resolve();
      };
      const timer = setTimeout(finish, timeoutMs);
      const feed = openTaskFeed({
        hub: this.hub,
        store: this.store,
        taskId,
        afterId,
        onEvent: finish,
        onBehindBuffer: async () => {
          finish();
          return undefined;
        },
        onError: finish,
      });
    });
  }

  /**
   * Like waitForTurnEnd, and resolves with the task when the event that ended the wait carried
   * it (LiveEvent.answer). `liveOnly`: the task has published nothing yet (see openTaskFeed).
   */
  watchTurnEnd(taskId: string, afterId: string, timeoutMs: number, done: (state: TaskState) => boolean, liveOnly: boolean): TurnWatch {
    const wait = settlingWait(timeoutMs, () => feed.close());
    const feed = openTaskFeed({
      hub: this.hub,
      store: this.store,
      taskId,
      afterId,
      liveOnly,
      onEvent: (event: LiveEvent) => {
        if (event.state !== undefined && done(event.state)) wait.settle(answerOf(event));
      },
      // More events came than the buffer keeps while this watch caught up: the turn may have
      // ended among them, so the watch ends and its caller reads the task as it is.
      onBehindBuffer: async () => {
        wait.settle(undefined);
        return undefined;
      },
      // Redis has been unreachable past the outage grace period (or a read failed): fail the
      // waiting call with a retryable error rather than block until blockingTimeoutMs.
      onError: (error) => wait.settle(undefined, lostStreamError(taskId, error)),
    });
    return { done: wait.done, cancel: () => wait.settle(undefined) };
  }

  /**
   * Watches an existing task from before a message is accepted into it (a blocking follow-up),
   * so the call needs neither the task's snapshot nor a read of its replay buffer: what the watch
   * hears is held until `from` names the accept's own event, then the wait ends at the first
   * status after it whose state satisfies `done`, resolving with the task when that event carried
   * it (acceptMessage's answerHistory), as watchTurnEnd does. Only where one subscription hears
   * every task (watchesEveryTask): a per-task subscription could start after the accept's events.
   * A gap in live delivery is read back as by any feed, and what that read brings is held the same
   * way; past a held feed's bounds (HELD_EVENTS_MAX events, HELD_CHARS_MAX characters), or fallen
   * behind the buffer before `from`, the watch lets go and `from` reads the buffer after the
   * accept's event instead (watchTurnEnd).
   */
  watchFollowUpTurnEnd(taskId: string, timeoutMs: number, done: (state: TaskState) => boolean): FollowUpTurnWatch {
    if (!this.hub.watchesEveryTask) throw new Error('watchFollowUpTurnEnd needs a subscription that hears every task (not a Redis Cluster)');
    const startedAt = Date.now();
    let held: LiveEvent[] | undefined = [];
    let heldChars = 0;
    let afterId: string | undefined;
    // Set once held events were dropped (too many, or behind the buffer before the accept answered): `from` reads the buffer.
    let readInstead = false;
    let next: TurnWatch | undefined;
    const wait = settlingWait(timeoutMs, () => feed.close());
    const settle = wait.settle;
    const consider = (event: LiveEvent): void => {
      if (afterId === undefined || compareEventIds(event.id, afterId) <= 0) return;
      if (event.state !== undefined && done(event.state)) settle(answerOf(event));
    };
    const giveUpHolding = (): void => {
      readInstead = true;
      held = undefined;
      feed.close();
    };
    const feed = openTaskFeed({
      hub: this.hub,
      store: this.store,
      taskId,
      afterId: '',
      liveOnly: true,
      onEvent: (event) => {
        if (afterId !== undefined) consider(event);
        else if (held !== undefined) {
          held.push(event);
          heldChars += event.json.length;
          if (held.length > HELD_EVENTS_MAX || heldChars > HELD_CHARS_MAX) giveUpHolding();
        }
      },
      onBehindBuffer: async () => {
        if (afterId === undefined) giveUpHolding();
        else settle(undefined);
        return undefined;
      },
      onError: (error) => settle(undefined, lostStreamError(taskId, error)),
    });
    return {
      done: wait.done,
      cancel: () => {
        next?.cancel();
        settle(undefined);
      },
      from: (id) => {
        if (afterId !== undefined) throw new Error(`the follow-up watch of task ${taskId} was told where to start already`);
        afterId = id;
        if (readInstead) {
          next = this.watchTurnEnd(taskId, id, Math.max(0, timeoutMs - (Date.now() - startedAt)), done, false);
          next.done.then((answer) => settle(answer), (error: Error) => settle(undefined, error));
          return;
        }
        const pending = held ?? [];
        held = undefined;
        for (const event of pending) consider(event);
      },
    };
  }
}

/** A watch opened before the accept of a follow-up: told where the accepted message's turn starts once the accept answered. */
export interface FollowUpTurnWatch extends TurnWatch {
  /** The accept's own event: the turn's end is looked for after it. Once only. */
  from(afterId: string): void;
}

/**
 * A turn's wait: settles once, with the task an event carried (undefined: the caller reads it) or
 * an error, and with undefined at its timeout; `close` frees what it listened on.
 */
function settlingWait(timeoutMs: number, close: () => void): { done: Promise<TaskRead | undefined>; settle: (answer: TaskRead | undefined, error?: Error) => void } {
  let resolve: (answer: TaskRead | undefined) => void = () => undefined;
  let reject: (error: Error) => void = () => undefined;
  const done = new Promise<TaskRead | undefined>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A watch canceled after it failed (its submit failed too) is never awaited: not an unhandled rejection.
  done.catch(() => undefined);
  let settled = false;
  const settle = (answer: TaskRead | undefined, error?: Error): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    close();
    if (error === undefined) resolve(answer);
    else reject(error);
  };
  const timer = setTimeout(() => settle(undefined), timeoutMs);
  return { done, settle };
}

/** The feed of a waiting call failed: the call fails with a retryable error rather than block until its timeout. */
function lostStreamError(taskId: string, error: Error): A2AError {
  return new A2AError(
    'UNAVAILABLE',
    `Lost the event stream of task ${taskId} while waiting for it: ${(error.cause instanceof Error ? error.cause : error).message} The task is stored and goes on. Retry after the Retry-After delay: GetTask ${taskId}, or send the same message again (same messageId), which does not start a second task.`,
    { retryAfterSeconds: 1, metadata: { taskId }, cause: error },
  );
}

/** The task an event carried to the waiting call; undefined (the caller reads it) when none or unreadable. */
function answerOf(event: LiveEvent): TaskRead | undefined {
  if (event.answer === undefined) return undefined;
  try {
    return taskReadOfAnswer(event.answer);
  } catch {
    return undefined;
  }
}
