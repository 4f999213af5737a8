// One ordered, gap-free, duplicate-free sequence of a task's events from a given point:
// listen live first, then read the replay buffer, then hand over to live delivery, skipping
// what was already delivered. Every stream, blocked SendMessage and resume uses this.
import { A2AError } from '../protocol/errors.ts';
import { isRedisConnectionError } from '../redis/connection.ts';
import { isBeforeBuffer } from '../store/replay-bound.ts';
import type { TaskStore } from '../store/task-store.ts';
import { replayedEvents } from '../telemetry/metrics.ts';
import { compareEventIds, LiveDeliveryLostError, stateOfEventJson, type EventHub, type LiveEvent } from './hub.ts';

export interface TaskFeed {
  /** Stops delivery and frees the listener at once. */
  close(): void;
}

/** Who a feed delivers to, and from where. */
export interface TaskFeedConsumer {
  /** Deliver events strictly after this id ('' = from the first stored event). */
  afterId: string;
  onEvent: (event: LiveEvent) => void;
  /**
   * The feed cannot go on (it is closed by then). When Redis is unreachable (a buffer read
   * failed, or live delivery has been down past the hub's grace period) the error is an
   * UNAVAILABLE A2AError with Retry-After that names the Last-Event-ID to resume from.
   */
  onError: (error: Error) => void;
  /**
   * The replay bound dropped events after the last one delivered before the feed read them (it
   * fell behind by more than the buffer holds): the consumer shows what it must (a snapshot and
   * a skip note) and answers the event id to go on after, or undefined when it stops. Without
   * it the feed fails with an error naming the Last-Event-ID to resume from.
   */
  onBehindBuffer?: (lastDeliveredId: string) => Promise<string | undefined>;
}

export function openTaskFeed(
  options: TaskFeedConsumer & {
    hub: EventHub;
    store: TaskStore;
    taskId: string;
    /**
     * Skip the initial buffer read: only for a task whose first event cannot have been published
     * yet (the caller opens the feed before creating the task). Gaps are still read back.
     */
    liveOnly?: boolean;
  },
): TaskFeed {
  const { hub, store, taskId, onEvent, onError } = options;
  let lastDelivered = options.afterId;
  // Live events wait in `buffered` while any replay read is in flight, so nothing newer
  // overtakes an older event still being read from the buffer.
  let readsInFlight = 0;
  let closed = false;
  let buffered: LiveEvent[] = [];

  const deliver = (event: LiveEvent): void => {
    if (closed) return;
    if (lastDelivered !== '' && compareEventIds(event.id, lastDelivered) <= 0) return;
    lastDelivered = event.id;
    onEvent(event);
  };

  const fail = (error: Error): void => {
    if (closed) return;
    closed = true;
    buffered = [];
    stopListening();
    onError(isRedisConnectionError(error) || error instanceof LiveDeliveryLostError ? resumeHint(taskId, lastDelivered, error) : error);
  };

  const catchUp = async (initial = false): Promise<void> => {
    readsInFlight += 1;
    let replayed = 0;
    try {
      // Read in pages so a long buffer does not arrive as one huge reply.
      for (;;) {
        const { events: page, trimmed } = await store.gateway.readEventsAfter(taskId, lastDelivered, 500);
        if (lastDelivered !== '' && isBeforeBuffer(lastDelivered, trimmed)) {
          const continueAfter = options.onBehindBuffer === undefined ? undefined : await options.onBehindBuffer(lastDelivered);
          if (continueAfter === undefined) {
            if (options.onBehindBuffer === undefined) fail(behindBufferError(taskId, lastDelivered));
            return;
          }
          if (closed) return;
          lastDelivered = continueAfter;
          continue;
        }
        replayed += page.length;
        for (const stored of page) deliver({ id: stored.id, json: stored.json, state: stateOfEventJson(stored.json) });
        if (page.length < 500 || closed) break;
      }
      if (initial) replayedEvents.observe(replayed);
    } catch (error) {
      fail(error as Error);
      return;
    } finally {
      readsInFlight -= 1;
    }
    if (readsInFlight > 0) return;
    const pending = buffered;
    buffered = [];
    for (const event of pending) deliver(event);
  };

  const stopListening = hub.listen(
    taskId,
    (event) => {
      if (readsInFlight > 0) buffered.push(event);
      else deliver(event);
    },
    () => void catchUp(),
    (error) => fail(error),
    // What deliver would drop: the hub need not read it (an event announced by id).
    (id) => lastDelivered === '' || compareEventIds(id, lastDelivered) > 0,
  );
  // The first read waits until live delivery of the task is on (a per-task subscription on a
  // Cluster); live events arriving meanwhile are held, as during any read. A per-task
  // subscription may come after the task's first events, so there the read is never skipped.
  if (!hub.subscribesPerTask) {
    if (options.liveOnly !== true) void catchUp(true);
  } else {
    readsInFlight += 1;
    void hub.listening(taskId).then(() => {
      readsInFlight -= 1;
      return catchUp(true);
    });
  }

  return {
    close() {
      closed = true;
      buffered = [];
      stopListening();
    },
  };
}

/** The feed fell behind the replay buffer and its consumer cannot show a snapshot. */
export function behindBufferError(taskId: string, lastDelivered: string): A2AError {
  return new A2AError(
    'UNAVAILABLE',
    `More events of task ${taskId} arrived than its replay buffer keeps (replay.maxEvents) before this stream read them. Subscribe again with Last-Event-ID: ${lastDelivered} to get the task's snapshot and the events after it.`,
    { retryAfterSeconds: 0, metadata: { taskId, lastEventId: lastDelivered, reason: 'REPLAY_BUFFER_TRIMMED' } },
  );
}

/** Redis is unreachable: the client should come back later from where it got to. */
function resumeHint(taskId: string, lastDelivered: string, cause: Error): A2AError {
  const resume =
    lastDelivered === ''
      ? `Subscribe to task ${taskId} again (SubscribeToTask) after the Retry-After delay`
      : `Reconnect after the Retry-After delay with Last-Event-ID: ${lastDelivered} to resume without missing an event`;
  return new A2AError('UNAVAILABLE', `${cause.message} This stream of task ${taskId} stopped; the task itself goes on. ${resume}.`, {
    retryAfterSeconds: 1,
    metadata: lastDelivered === '' ? { taskId } : { taskId, lastEventId: lastDelivered },
    cause,
  });
}
