// Pipes one task's events into one SSE response (../task-stream.ts delivers them in order and
// decides when the stream ends). Closing the response only drops this listener: the task goes
// on (a connection is not a turn).
import type { ServerResponse } from 'node:http';
import type { TaskFeed } from '../../events/task-feed.ts';
import { LimitExceededError } from '../../limits/limit-refusal.ts';
import type { GatewayHandler } from '../../tasks/gateway-handler.ts';
import type { StreamPlan } from '../../operations/stream-plan.ts';
import { timeToFirstEvent } from '../../telemetry/metrics.ts';
import { notesOf } from '../http/request-notes.ts';
import { streamTaskEvents } from '../task-stream.ts';
import type { SseStreams } from './sse-writer.ts';

export interface TaskStreamOptions {
  service: GatewayHandler;
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
  const { frameError, response } = options;
  const { taskId } = options.plan;
  let feed: TaskFeed | undefined;
  const sse = options.streams.open(
    response,
    () => {
      feed?.close();
      options.plan.onStreamEnd?.();
    },
    {
      slowReaderFrame: () =>
        frameError(
          new LimitExceededError(
            'sseMaxBufferedBytes',
            'RESOURCE_EXHAUSTED',
            options.plan.everyTask === true
              ? 'This stream ends because it was read too slowly: too many bytes waited for the client (sseMaxBufferedBytes). Read the task list again, then watch again.'
              : `This stream ends because it was read too slowly: too many bytes waited for the client (sseMaxBufferedBytes). The task goes on; subscribe to task ${taskId} again with Last-Event-ID set to the id of the last event received, and nothing is missed.`,
            { metadata: { reason: 'SLOW_READER', ...(options.plan.everyTask === true ? {} : { taskId }) } },
          ),
        ),
    },
  );
  if (options.plan.everyTask === true) {
    // Live only, nothing to resume: no ids. The first frame says the watch is on, so a client
    // reads what it shows after it and misses nothing in between.
    sse.send(options.frame(JSON.stringify({ watchStarted: { at: new Date().toISOString() } })));
    const stop = options.service.operator.watchEveryTask(
      (event) => sse.send(options.frame(event.json)),
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
  // Time to first event: from the request's arrival (noted by the request observer) to the
  // first event after the opening snapshot, i.e. the first thing the turn said.
  const arrivedAtNs = notesOf(response).arrivedAtNs ?? process.hrtime.bigint();
  feed = streamTaskEvents({
    service: options.service,
    sink: sse,
    plan: options.plan,
    frame: options.frame,
    onFirstEvent: () => timeToFirstEvent.observe({ method: notesOf(response).operation ?? 'unknown' }, Number(process.hrtime.bigint() - arrivedAtNs) / 1e9),
    fail: (error) => {
      const framed = frameError(error);
      sse.send(framed.data, framed.event === undefined ? undefined : { event: framed.event });
      sse.end();
    },
  });
}
