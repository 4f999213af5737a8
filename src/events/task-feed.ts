// One ordered, gap-free, duplicate-free sequence of a task's events from a given point:
// listen live first, then read the replay buffer, then hand over to live delivery, skipping
// what was already delivered. Every stream, blocked SendMessage and resume uses this.
import type { TaskStore } from '../store/task-store.ts';
import { compareEventIds, stateOfEventJson, type EventHub, type LiveEvent } from './hub.ts';

export interface TaskFeed {
  /** Stops delivery and frees the listener at once. */
  close(): void;
}

export function openTaskFeed(options: {
  hub: EventHub;
  store: TaskStore;
  taskId: string;
  /** Deliver events strictly after this id ('' = from the first stored event). */
  afterId: string;
  onEvent: (event: LiveEvent) => void;
  onError: (error: Error) => void;
  /**
   * Skip the initial buffer read: only for a task whose first event cannot have been published
   * yet (the caller opens the feed before creating the task). Gaps are still read back.
   */
  liveOnly?: boolean;
}): TaskFeed {
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

  const catchUp = async (): Promise<void> => {
    readsInFlight += 1;
    try {
      // Read in pages so a long buffer does not arrive as one huge reply.
      for (;;) {
        const page = await store.readEvents(taskId, lastDelivered, 500);
        for (const stored of page) deliver({ id: stored.id, json: stored.json, state: stateOfEventJson(stored.json) });
        if (page.length < 500 || closed) break;
      }
    } catch (error) {
      if (!closed) onError(error as Error);
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
  );
  if (options.liveOnly !== true) void catchUp();

  return {
    close() {
      closed = true;
      buffered = [];
      stopListening();
    },
  };
}
