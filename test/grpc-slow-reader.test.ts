// A gRPC stream whose reader stops reading: once more than sseMaxBufferedBytes of events wait
// for it, the stream ends with RESOURCE_EXHAUSTED (reason SLOW_READER) instead of buffering
// without bound; resuming from the last event received delivers the rest, exactly once.
import { SendMessageRequest, SubscribeToTaskRequest, type SendMessageResponse, type Task } from '@a2a-js/sdk';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SLOW_READER_GRACE_MS } from '../src/bindings/grpc/grpc-streams.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { detailsOf, eventIdOf, metadataOf, rawGrpc } from './support/grpc.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'grpc-slow', config: { grpcPort: 0, sseMaxBufferedBytes: 16_384, replay: { maxEvents: 10_000 } }, adapterOptions: { stepMs: 5 } });
});

afterAll(async () => {
  await gw?.close();
});

describe('a slow gRPC reader', () => {
  it('is cut off with SLOW_READER and the id to resume from, and resuming from it misses nothing', async () => {
    const grpc = rawGrpc(gw.gateway.grpc?.address as string);
    try {
      const words = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(' ');
      const sent = await grpc.unary<SendMessageResponse>('sendMessage', SendMessageRequest.fromJSON({ message: textMessage(`stream ${words}`), configuration: { returnImmediately: true } }));
      expect(sent.error?.details).toBeUndefined();
      const task = sent.response?.payload?.value as Task;
      // A reader that stops reading while the task keeps producing.
      const slow = grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: task.id }));
      slow.call.pause();
      // Far more than HTTP/2's flow-control window and the bound have been produced for it ...
      const eventsKey = `${gw.prefix}:{${task.id}}:events`;
      await waitFor(async () => ((await gw.redis.xlen(eventsKey)) >= 800 ? true : undefined), 60_000, '800 events');
      // ... and the task goes on producing (over 2000 events of 5 ms each remain) past the grace.
      await new Promise((resolve) => setTimeout(resolve, SLOW_READER_GRACE_MS + 1_000));
      expect(await gw.redis.hget(`${gw.prefix}:{${task.id}}:task`, 'state')).toBe('TASK_STATE_WORKING');
      slow.call.resume();
      const cut = await slow.done;
      // The cut stream did not stop the task: it still produces ...
      const atCut = await gw.redis.xlen(eventsKey);
      await waitFor(async () => ((await gw.redis.xlen(eventsKey)) >= atCut + 50 ? true : undefined), 30_000, 'more events after the cut');
      // ... and is then canceled, not left to finish: what follows needs the stream's end, not
      // all 3000 words (their 15 s and more are only there so the task outlasts the grace).
      const canceled = await rpc(gw.jsonRpcUrl, 'CancelTask', { id: task.id });
      expect(canceled.body.error).toBeUndefined();
      await waitFor(async () => ((await gw.redis.hget(`${gw.prefix}:{${task.id}}:task`, 'state')) === 'TASK_STATE_CANCELED' ? true : undefined), 30_000, 'the task to be canceled');
      const stored = (await gw.redis.xrange(eventsKey, '-', '+')).map(([id]) => id);
      expect(stored.length).toBeGreaterThanOrEqual(atCut + 50);
      expect(cut.error?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
      const info = detailsOf(cut.error as NonNullable<typeof cut.error>).errorInfo;
      expect(info?.metadata).toMatchObject({ reason: 'SLOW_READER', taskId: task.id });
      // The hint names the last event the gateway wrote; grpc-js surfaces a non-OK status at
      // once and drops what the reader had not read yet, so a client resumes from the last
      // event it received (docs/grpc.md).
      const written = info?.metadata.lastEventId as string;
      expect(stored).toContain(written);
      expect(stored.indexOf(written)).toBeLessThan(stored.length - 1);
      // A snapshot first (its id a stored event's), then the events after it, in order.
      const received = cut.events.map(eventIdOf);
      expect(cut.events[0]?.payload?.$case).toBe('task');
      const from = stored.indexOf(received[0] as string);
      expect(from).toBeGreaterThanOrEqual(0);
      expect(received).toEqual(stored.slice(from, from + received.length));
      const resumeAfter = received.at(-1) as string;
      const rest = await grpc.stream('subscribeToTask', SubscribeToTaskRequest.fromJSON({ id: task.id }), metadataOf({ 'a2a-version': '1.0', 'last-event-id': resumeAfter })).done;
      expect(rest.error).toBeUndefined();
      // Resumed with everything after it: nothing missed, nothing twice, and no new snapshot.
      expect(rest.events.some((event) => event.payload?.$case === 'task')).toBe(false);
      expect([...received, ...rest.events.map(eventIdOf)]).toEqual(stored.slice(from));
    } finally {
      grpc.close();
    }
  }, 120_000);
});
