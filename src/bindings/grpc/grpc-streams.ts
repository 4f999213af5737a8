// The open gRPC server streams of one gateway: each a sink for ../task-stream.ts that writes
// StreamResponse messages carrying their event id, bounds what may wait for a slow reader, and
// ends with a resume hint at shutdown (the gRPC counterpart of the SSE `retry:` line).
import { status as GrpcStatus, type ServerWritableStream } from '@grpc/grpc-js';
import { A2AError } from '../../protocol/errors.ts';
import { LimitExceededError } from '../../limits/limit-refusal.ts';
import type { StreamSink } from '../task-stream.ts';
import { grpcCodeOf, grpcStatusOf } from './status.ts';

/** Where a gRPC stream event carries its id (the SSE `id:`): the event's metadata, under the gateway's key. */
export const EVENT_ID_METADATA = { namespace: 'a2aGateway', key: 'eventId' } as const;

/**
 * How long the bytes waiting for a reader may stay above the bound before its stream is cut.
 * grpc-js confirms a write only asynchronously, so a replay burst (a page of 500 stored events,
 * written at once) is "waiting" for a moment even for the fastest reader; a reader that does
 * not read stays above the bound, one that does comes back under it.
 */
export const SLOW_READER_GRACE_MS = 2_000;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A StreamResponse JSON with `metadata.a2aGateway.eventId` set on its one payload (Task, Message or update). */
export function withEventId(streamResponseJson: string, eventId: string | undefined): Record<string, unknown> {
  const response = JSON.parse(streamResponseJson) as Record<string, unknown>;
  if (eventId === undefined || eventId === '') return response;
  for (const payload of Object.values(response)) {
    if (!isObject(payload)) continue;
    const metadata = isObject(payload.metadata) ? payload.metadata : {};
    const own = isObject(metadata[EVENT_ID_METADATA.namespace]) ? (metadata[EVENT_ID_METADATA.namespace] as Record<string, unknown>) : {};
    payload.metadata = { ...metadata, [EVENT_ID_METADATA.namespace]: { ...own, [EVENT_ID_METADATA.key]: eventId } };
  }
  return response;
}

export interface GrpcStreamSink extends StreamSink {
  /** Ends the call with an error status instead of OK. */
  fail(error: A2AError): void;
}

export class GrpcStreams {
  private readonly streams = new Set<{ sink: GrpcStreamSink; resumeHint: () => A2AError }>();

  /** `maxBufferedBytes`: event bytes that may wait for a reader before its stream is ended (sseMaxBufferedBytes). */
  constructor(private readonly maxBufferedBytes: number) {}

  get size(): number {
    return this.streams.size;
  }

  /**
   * A sink writing to `call`; `toMessage` turns an event's JSON (with its id set) into the SDK
   * message. `onClose` runs once, with the status code the stream ended with (CANCELLED when the
   * client went away).
   */
  open(call: ServerWritableStream<unknown, unknown>, taskId: string, toMessage: (json: Record<string, unknown>) => unknown, onClose: (code: number) => void): GrpcStreamSink {
    let closed = false;
    let waitingBytes = 0;
    let overBoundSinceMs: number | undefined;
    let lastEventId: string | undefined;
    const resumeHow = (): string =>
      lastEventId === undefined
        ? `call SubscribeToTask for task ${taskId} again`
        : `call SubscribeToTask for task ${taskId} again with the metadata "last-event-id: ${lastEventId}" to resume without missing an event`;
    const entry = {
      sink: undefined as unknown as GrpcStreamSink,
      resumeHint: () =>
        new A2AError('UNAVAILABLE', `This gateway is shutting down; the task goes on. After the retry delay, ${resumeHow()} (through any gateway).`, {
          retryAfterSeconds: 1,
          metadata: { reason: 'SHUTTING_DOWN', taskId, ...(lastEventId === undefined ? {} : { lastEventId }) },
        }),
    };
    const finish = (code: number): void => {
      if (closed) return;
      closed = true;
      this.streams.delete(entry);
      onClose(code);
    };
    const sink: GrpcStreamSink = {
      get closed() {
        return closed;
      },
      send: (data, options) => {
        if (closed) return;
        if (waitingBytes > this.maxBufferedBytes) overBoundSinceMs ??= Date.now();
        if (overBoundSinceMs !== undefined && Date.now() - overBoundSinceMs > SLOW_READER_GRACE_MS) {
          sink.fail(
            new LimitExceededError('sseMaxBufferedBytes', 'RESOURCE_EXHAUSTED', `This stream ends because it was read too slowly: too many bytes waited for the client (sseMaxBufferedBytes). The task goes on; ${resumeHow()}.`, {
              metadata: { reason: 'SLOW_READER', taskId, ...(lastEventId === undefined ? {} : { lastEventId }) },
            }),
          );
          return;
        }
        const message = toMessage(withEventId(data, options?.id));
        const size = data.length;
        waitingBytes += size;
        if (options?.id !== undefined && options.id !== '') lastEventId = options.id;
        call.write(message, () => {
          waitingBytes -= size;
          if (waitingBytes <= this.maxBufferedBytes) overBoundSinceMs = undefined;
        });
      },
      end: () => {
        if (closed) return;
        finish(GrpcStatus.OK);
        call.end();
      },
      fail: (error) => {
        if (closed) return;
        finish(grpcCodeOf(error));
        // grpc-js ends the call with this status once the messages before it are flushed.
        call.emit('error', grpcStatusOf(error));
      },
    };
    entry.sink = sink;
    this.streams.add(entry);
    call.once('cancelled', () => finish(GrpcStatus.CANCELLED));
    return sink;
  }

  /** Ends every open stream with UNAVAILABLE, a retry delay and the last event id to resume from. Returns how many. */
  endAll(): number {
    const open = [...this.streams];
    for (const { sink, resumeHint } of open) sink.fail(resumeHint());
    return open.length;
  }
}
