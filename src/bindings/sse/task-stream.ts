// Pipes one task's events into one SSE response, in order, and ends the response when the
// stream's closing condition is met. Closing the response only drops this listener: the task
// goes on (a connection is not a turn).
import type { ServerResponse } from 'node:http';
import { openTaskFeed } from '../../events/task-feed.ts';
import { A2AError } from '../../protocol/errors.ts';
import type { LiveEvent } from '../../events/hub.ts';
import type { TaskService } from '../../tasks/service.ts';
import type { StreamPlan } from '../../operations/stream-plan.ts';
import type { SseStreams } from './sse-writer.ts';

export interface TaskStreamOptions {
  service: TaskService;
  response: ServerResponse;
  streams: SseStreams;
  /** Where the stream starts and what ends it (from the operation's open()). */
  plan: StreamPlan;
  /** Wraps a StreamResponse JSON into what the binding puts in `data:`. */
  frame: (streamResponseJson: string) => string;
  /** Frames a failure that happens after the stream started. */
  frameError: (error: Error) => { data: string; event?: string };
}

export function pipeTaskStream(options: TaskStreamOptions): void {
  // Only what the live callbacks need is kept in their closures: an idle stream lives for
  // hours, and the snapshot (a whole Task with history) must not live with it.
  const { service, response, frame, frameError, streams } = options;
  const { snapshot, closesOn, taskId, afterId, alreadyEnded } = options.plan;
  let feed: { close(): void } | undefined;
  const sse = streams.open(response, () => feed?.close(), {
    slowReaderFrame: () =>
      frameError(
        new A2AError(
          'RESOURCE_EXHAUSTED',
          options.plan.everyTask === true
            ? 'This stream ends because it was read too slowly: too many bytes waited for the client (sseMaxBufferedBytes). Read the task list again, then watch again.'
            : `This stream ends because it was read too slowly: too many bytes waited for the client (sseMaxBufferedBytes). The task goes on; subscribe to task ${taskId} again with Last-Event-ID set to the id of the last event received, and nothing is missed.`,
          { metadata: { reason: 'SLOW_READER', ...(options.plan.everyTask === true ? {} : { taskId }) } },
        ),
      ),
  });

  if (options.plan.everyTask === true) {
    // Live only, nothing to resume: no ids. The first frame says the watch is on, so a client
    // reads what it shows after it and misses nothing in between.
    sse.send(frame(JSON.stringify({ watchStarted: { at: new Date().toISOString() } })));
    const stop = service.hub.listenToEveryTask(
      (event) => sse.send(frame(event.json)),
      () => sse.end(),
      (error) => {
        const framed = frameError(error);
        sse.send(framed.data, framed.event === undefined ? undefined : { event: framed.event });
        sse.end();
      },
    );
    feed = { close: stop };
    if (sse.closed) stop();
    return;
  }
  if (snapshot !== undefined) {
    sse.send(frame(JSON.stringify({ task: snapshot.task })), { id: snapshot.eventId });
    if (closesOn(snapshot.task.status.state)) {
      sse.end();
      return;
    }
  }
  if (alreadyEnded === true) {
    sse.end();
    return;
  }
  const deliver = (event: LiveEvent): void => {
    sse.send(frame(event.json), { id: event.id });
    if (event.state !== undefined && closesOn(event.state)) sse.end();
  };
  // A stream that may turn out to be message-only holds the task's lifecycle frames back until
  // the turn shows what it is (StreamPlan.holdForDirectReply).
  const hold = options.plan.holdForDirectReply;
  let held: LiveEvent[] | undefined = hold === undefined ? undefined : [];
  feed = openTaskFeed({
    hub: service.hub,
    store: service.store,
    taskId,
    afterId,
    onEvent: (event) => {
      if (held !== undefined && hold !== undefined) {
        const reply = hold.directReplyOf(event.json);
        if (reply !== undefined) {
          sse.send(frame(JSON.stringify({ message: reply })), { id: event.id });
          sse.end();
          return;
        }
        if (isLifecycleEvent(event)) {
          held.push(event);
          return;
        }
        const release = held;
        held = undefined;
        for (const earlier of release) deliver(earlier);
      }
      deliver(event);
    },
    onError: (error) => {
      const framed = frameError(error);
      sse.send(framed.data, framed.event === undefined ? undefined : { event: framed.event });
      sse.end();
    },
  });
  if (sse.closed) feed.close();
}

/**
 * The events a task has before its turn shows anything: its creation (a Task snapshot) and the
 * start of its turn (a bare WORKING status update, no message, no metadata).
 */
function isLifecycleEvent(event: LiveEvent): boolean {
  if (event.json.startsWith('{"task":')) return true;
  if (event.state !== 'TASK_STATE_WORKING' && event.state !== 'TASK_STATE_SUBMITTED') return false;
  const parsed = JSON.parse(event.json) as { statusUpdate?: { status: { message?: unknown }; metadata?: unknown } };
  return parsed.statusUpdate !== undefined && parsed.statusUpdate.status.message === undefined && parsed.statusUpdate.metadata === undefined;
}
