// Pipes one task's events into one SSE response, in order, and ends the response when the
// stream's closing condition is met. Closing the response only drops this listener: the task
// goes on (a connection is not a turn).
import type { ServerResponse } from 'node:http';
import { openTaskFeed } from '../../events/task-feed.ts';
import { A2AError } from '../../protocol/errors.ts';
import type { TaskService } from '../../tasks/service.ts';
import type { StreamPlan } from '../operations.ts';
import type { SseStreams } from './sse-writer.ts';

export interface TaskStreamOptions {
  service: TaskService;
  response: ServerResponse;
  streams: SseStreams;
  /** Where the stream starts and what ends it (from startStreamOperation). */
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
          `This stream ends because it was read too slowly: too many bytes waited for the client (sseMaxBufferedBytes). The task goes on; subscribe to task ${taskId} again with Last-Event-ID set to the id of the last event received, and nothing is missed.`,
          { metadata: { reason: 'SLOW_READER', taskId } },
        ),
      ),
  });

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
  feed = openTaskFeed({
    hub: service.hub,
    store: service.store,
    taskId,
    afterId,
    onEvent: (event) => {
      sse.send(frame(event.json), { id: event.id });
      if (event.state !== undefined && closesOn(event.state)) sse.end();
    },
    onError: (error) => {
      const framed = frameError(error);
      sse.send(framed.data, framed.event === undefined ? undefined : { event: framed.event });
      sse.end();
    },
  });
  if (sse.closed) feed.close();
}
