// One task's events delivered to one open stream, in order, and the stream ended when its
// closing condition is met. Binding-neutral: SSE (./sse/task-stream.ts) and gRPC server
// streaming (./grpc/) each bring the sink they write to. Ending the stream only drops this
// listener: the task goes on (a connection is not a turn).
import type { TaskFeed } from '../events/task-feed.ts';
import type { LiveEvent } from '../events/hub.ts';
import type { StreamPlan } from '../operations/stream-plan.ts';
import { serializeFramed } from '../protocol/json-fragment.ts';
import type { Task } from '../protocol/types.ts';
import type { A2AHandler } from '../tasks/a2a-handler.ts';

/** Where a stream's frames go: an SSE response, a gRPC call. */
export interface StreamSink {
  /** Writes one frame; `id` is the event id a client resumes after. */
  send(data: string, options?: { id?: string; event?: string }): void;
  /**
   * Writes one frame made of pieces (a snapshot whose large artifacts were spliced in,
   * src/protocol/json-fragment.ts). Only a sink whose binding splices has it (SSE).
   */
  sendPieces?(data: readonly Uint8Array[], options?: { id?: string; event?: string }): void;
  /** Ends the stream; safe to call twice. */
  end(): void;
  /** True once the client went away or end() was called. */
  readonly closed: boolean;
}

export interface TaskEventsOptions {
  /** Delivers the planned stream's events (A2AHandler.followTask). */
  service: Pick<A2AHandler, 'followTask'>;
  sink: StreamSink;
  /** Where the stream starts and what ends it (from the operation's open()). */
  plan: StreamPlan;
  /** Wraps a StreamResponse JSON into what the binding writes. */
  frame: (streamResponseJson: string) => string;
  /**
   * A failure after the stream started: the binding writes it (an error frame and the end of
   * the stream); the feed is closed by then.
   */
  fail: (error: Error) => void;
  /** Called once, at the first event after the opening snapshot (the time-to-first-event metric). */
  onFirstEvent?: () => void;
}

/** Starts delivery; the returned feed must be closed when the sink closes on its own (the client left). */
export function streamTaskEvents(options: TaskEventsOptions): TaskFeed | undefined {
  // Only what the live callbacks need is kept in their closures: an idle stream lives for
  // hours, and the snapshot (a whole Task with history) must not live with it.
  const { service, sink, frame, fail } = options;
  let onFirstEvent = options.onFirstEvent;
  const { snapshot, skipNote, closesOn, taskId, afterId, alreadyEnded, held: watched } = options.plan;
  if (snapshot !== undefined) {
    sendSnapshot(sink, frame, snapshot.task, snapshot.eventId);
    if (skipNote !== undefined) sink.send(frame(JSON.stringify(skipNote)));
    if (closesOn(snapshot.task.status.state)) {
      watched?.close();
      sink.end();
      return undefined;
    }
  }
  if (alreadyEnded === true) {
    watched?.close();
    sink.end();
    return undefined;
  }
  const deliver = (event: LiveEvent): void => {
    if (onFirstEvent !== undefined) {
      onFirstEvent();
      onFirstEvent = undefined;
    }
    sink.send(frame(event.json), { id: event.id });
    if (event.state !== undefined && closesOn(event.state)) sink.end();
  };
  // A stream that may turn out to be message-only holds the task's lifecycle frames back until
  // the turn shows what it is (StreamPlan.holdForDirectReply).
  const hold = options.plan.holdForDirectReply;
  let held: LiveEvent[] | undefined = hold === undefined ? undefined : [];
  const feed = service.followTask({
    taskId,
    afterId,
    ...(watched === undefined ? {} : { held: watched }),
    onEvent: (event) => {
      if (held !== undefined && hold !== undefined) {
        const reply = hold.directReplyOf(event.json);
        if (reply !== undefined) {
          sink.send(frame(JSON.stringify({ message: reply })), { id: event.id });
          sink.end();
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
    ...(options.plan.snapshotAfterSkip === undefined ? {} : { onBehindBuffer: catchUpFromSnapshot(options.plan.snapshotAfterSkip) }),
    onError: fail,
  });
  if (sink.closed) feed.close();
  return feed;

  /** A stream that fell behind the trimmed buffer goes on from a fresh snapshot and a note (docs/replay.md). */
  function catchUpFromSnapshot(snapshotAfterSkip: NonNullable<StreamPlan['snapshotAfterSkip']>): (lastDeliveredId: string) => Promise<string | undefined> {
    return async (lastDeliveredId) => {
      const { snapshot: again, skipNote: note } = await snapshotAfterSkip(lastDeliveredId);
      if (sink.closed) return undefined;
      held = undefined;
      sendSnapshot(sink, frame, again.task, again.eventId);
      sink.send(frame(JSON.stringify(note)));
      if (closesOn(again.task.status.state)) {
        sink.end();
        return undefined;
      }
      return again.eventId;
    };
  }
}

/**
 * A Task snapshot as the stream's frame. A large task's artifacts may be the assembly thread's
 * bytes (a JsonFragment, when the binding splices: Caller.answersSpliced), written as they are.
 */
function sendSnapshot(sink: StreamSink, frame: (streamResponseJson: string) => string, task: Task, eventId: string): void {
  const framed = serializeFramed({ task }, frame);
  if (typeof framed === 'string') sink.send(framed, { id: eventId });
  else if (sink.sendPieces !== undefined) sink.sendPieces(framed, { id: eventId });
  else throw new Error('a spliced Task snapshot reached a stream that cannot write pieces');
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
