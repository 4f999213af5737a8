// A new task's events, watched from before the task is created and held until the stream that
// asked for it is ready to take them. A task publishes nothing before its creation, so a watch
// opened first misses nothing and the stream needs no read of the replay buffer: one script
// call and one round trip fewer on every SendStreamingMessage that starts a task (the blocking
// SendMessage has watched first since its early wait; src/tasks/send-message.ts).
// What is held is bounded, in events and in characters. Past the bound, or when no stream takes
// the feed in time (its request failed between the create and the stream), the watch ends, and
// a stream that attaches later reads the buffer as every other stream does: the same events in
// the same order, at the price of the read this saves.
import type { TaskStore } from '../store/task-store.ts';
import { replayedEvents } from '../telemetry/metrics.ts';
import type { EventHub, LiveEvent } from './hub.ts';
import { behindBufferError, openTaskFeed, type TaskFeed, type TaskFeedConsumer } from './task-feed.ts';

/** Events held for a stream that has not attached yet; one more and the watch gives way to a buffer read. */
export const HELD_EVENTS_MAX = 64;
/** Characters of event JSON held, likewise. */
export const HELD_CHARS_MAX = 1 << 20;
/** How long a held watch waits for its stream; a request that never follows its plan leaves no listener behind. */
export const HOLD_MS = 10_000;

export interface HeldTaskFeed {
  readonly taskId: string;
  /**
   * Hands the feed to its consumer: what was held, then what comes live, in order, as
   * openTaskFeed from the task's first event would deliver them. Once only.
   */
  attach(consumer: TaskFeedConsumer): TaskFeed;
  /** Ends the watch unattached (the call did not create the task, or failed). */
  close(): void;
}

export function holdTaskFeed(hub: EventHub, store: TaskStore, taskId: string, holdMs = HOLD_MS): HeldTaskFeed {
  // Held events until attached and drained; undefined once delivered live, or once given up.
  let held: LiveEvent[] | undefined = [];
  let heldChars = 0;
  let consumer: TaskFeedConsumer | undefined;
  let failure: Error | undefined;
  // The watch ended before a stream took it: an attach reads the buffer instead.
  let gaveUp = false;
  let closed = false;

  const giveUp = (): void => {
    gaveUp = true;
    held = undefined;
    clearTimeout(timer);
    inner.close();
  };

  const inner = openTaskFeed({
    hub,
    store,
    taskId,
    afterId: '',
    liveOnly: true,
    onEvent: (event) => {
      if (held === undefined) {
        consumer?.onEvent(event);
        return;
      }
      held.push(event);
      heldChars += event.json.length;
      if (consumer === undefined && (held.length > HELD_EVENTS_MAX || heldChars > HELD_CHARS_MAX)) giveUp();
    },
    onError: (error) => {
      if (consumer !== undefined && held === undefined) consumer.onError(error);
      else failure = error;
    },
    // Only after a gap in live delivery, and only when more events came meanwhile than the
    // buffer keeps: unattached, the watch gives way to a read; attached, the consumer decides.
    onBehindBuffer: async (lastDeliveredId) => {
      if (consumer === undefined) {
        giveUp();
        return undefined;
      }
      if (consumer.onBehindBuffer !== undefined) return consumer.onBehindBuffer(lastDeliveredId);
      inner.close();
      consumer.onError(behindBufferError(taskId, lastDeliveredId));
      return undefined;
    },
  });
  const timer = setTimeout(() => {
    if (consumer === undefined) giveUp();
  }, holdMs);
  timer.unref();

  return {
    taskId,
    attach(attached) {
      if (consumer !== undefined || closed) throw new Error(`the held feed of task ${taskId} was attached or closed already`);
      clearTimeout(timer);
      // A consumer that starts later than the task's first event is no longer this watch's case.
      if (attached.afterId !== '' && !gaveUp) giveUp();
      if (gaveUp) return openTaskFeed({ hub, store, taskId, ...attached });
      consumer = attached;
      // One sample per stream opened, as a feed's first read gives: this one read nothing back.
      // (With per-task subscriptions, a Cluster's, the watch's own first read gave it.)
      if (!hub.subscribesPerTask) replayedEvents.observe(0);
      // Delivered after this call returns, as a feed's first events always are (a buffer read
      // first): a consumer's callbacks may rely on holding the returned feed by then.
      queueMicrotask(() => {
        const pending = held ?? [];
        for (let index = 0; index < pending.length && !closed; index++) attached.onEvent(pending[index] as LiveEvent);
        held = undefined;
        if (failure !== undefined && !closed) attached.onError(failure);
      });
      return {
        close() {
          closed = true;
          inner.close();
        },
      };
    },
    close() {
      closed = true;
      clearTimeout(timer);
      inner.close();
    },
  };
}
