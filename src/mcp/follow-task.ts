// Waits, within a bound, for a task to settle while its events are handed on (as MCP progress):
// the same ordered, gap-free delivery the SSE and gRPC streams use (bindings/task-stream.ts),
// with a sink that keeps nothing but the direct reply, if one comes. Stopping the wait only
// drops the listener: the task goes on (a connection is not a turn).
import type { StreamSink } from '../bindings/task-stream.ts';
import { streamTaskEvents } from '../bindings/task-stream.ts';
import type { TaskFeed } from '../events/task-feed.ts';
import type { StreamPlan } from '../operations/stream-plan.ts';
import type { Message, StreamResponse, TaskState } from '../protocol/types.ts';
import type { A2AHandler } from '../tasks/a2a-handler.ts';
import { hasSettled } from './task-results.ts';

export interface FollowOptions {
  /** Longest wait (mcp.maxWaitMs). */
  waitMs: number;
  /** Aborted when the MCP request is (the client cancelled or went away). */
  signal: AbortSignal;
  /** Each event of the task as it is delivered. */
  onEvent?: (event: StreamResponse) => void;
}

export interface FollowOutcome {
  /** True when the task settled (or the agent replied with a message) within the wait. */
  settled: boolean;
  /** The agent's direct reply, for a message-only exchange. */
  message: Message | undefined;
  /** The last state the stream showed. */
  state: TaskState | undefined;
}

function stateOf(event: StreamResponse): TaskState | undefined {
  if ('task' in event) return event.task.status.state;
  if ('statusUpdate' in event) return event.statusUpdate.status.state;
  return undefined;
}

export function followUntilSettled(service: Pick<A2AHandler, 'followTask'>, plan: StreamPlan, options: FollowOptions): Promise<FollowOutcome> {
  return new Promise((resolve, reject) => {
    let closed = false;
    let settled = false;
    let message: Message | undefined;
    let state: TaskState | undefined;
    let feed: TaskFeed | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (failure?: Error): void => {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      feed?.close();
      plan.onStreamEnd?.();
      if (failure !== undefined) reject(failure);
      else resolve({ settled, message, state });
    };
    const onAbort = (): void => finish();
    const sink: StreamSink = {
      send(data) {
        if (closed) return;
        const event = JSON.parse(data) as StreamResponse;
        if ('message' in event) {
          message = event.message;
          settled = true;
        }
        state = stateOf(event) ?? state;
        options.onEvent?.(event);
        if (state !== undefined && hasSettled(state)) settled = true;
        if (settled) finish();
      },
      end: () => finish(),
      get closed() {
        return closed;
      },
    };
    if (options.signal.aborted) {
      finish();
      return;
    }
    options.signal.addEventListener('abort', onAbort, { once: true });
    timer = setTimeout(() => finish(), options.waitMs);
    feed = streamTaskEvents({ service, sink, plan, frame: (json) => json, fail: (error) => finish(error) });
    if (closed) feed?.close();
  });
}
