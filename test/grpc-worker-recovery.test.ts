// A gRPC stream that crosses a worker SIGKILL: the official SDK's gRPC client streams a long
// task (SendStreamingMessage) while the worker running its turn is killed; another worker
// process recovers the turn, and the client receives every stored event exactly once, in the
// stored order, each with its stored id (metadata.a2aGateway.eventId), and the stream ends at
// COMPLETED (invariant 7 over gRPC).
import { SendMessageRequest, TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keepWorkersRunning, startTestGateway, stopWorkerProcesses, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import { eventIdOf } from './support/grpc.ts';

let gw: TestGateway;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ name: 'grpc-recovery', inProcessWorker: false, config: { grpcPort: 0 } });
  const env = { A2A_ADAPTER_OPTIONS: '{"stepMs":50}' };
  await keepWorkersRunning(workers, gw.prefix, env);
}, 180_000);

afterAll(async () => {
  await stopWorkerProcesses(workers);
  await gw?.close();
}, 60_000);

const pidOf = (workerId: string): number => Number(/:(\d+):[^:]+$/.exec(workerId)?.[1]);
const progressOf = (event: StreamResponse): number | undefined => {
  const metadata = event.payload?.$case === 'statusUpdate' ? (event.payload.value.status?.message?.metadata as { progress?: number } | undefined) : undefined;
  return metadata?.progress;
};

describe('a gRPC stream across a worker SIGKILL', () => {
  it('delivers every event once, in order, with the stored ids, and ends at COMPLETED', async () => {
    const factory = new ClientFactory({ transports: [new GrpcTransportFactory()], cardResolver: new DefaultAgentCardResolver() });
    const client = await factory.createFromUrl(`${gw.url}/.well-known/agent-card.json`, '');
    const received: StreamResponse[] = [];
    const streamed = (async () => {
      for await (const event of client.sendMessageStream(SendMessageRequest.fromJSON({ message: textMessage('long 60') }))) received.push(event);
    })();
    const taskId = await waitFor(() => (received[0]?.payload?.$case === 'task' ? received[0].payload.value.id : undefined), 60_000, 'the Task frame');
    const lease = `${gw.prefix}:{${taskId}}:lease`;
    const holderId = await waitFor(async () => (await gw.redis.get(lease)) ?? undefined, 60_000, 'a worker to take the lease');
    const victim = workers.find((w) => w.pid === pidOf(holderId));
    expect(victim, `lease holder ${holderId} is one of our worker processes`).toBeDefined();
    await waitFor(() => (received.filter((e) => progressOf(e) !== undefined).length >= 3 ? true : undefined), 60_000, 'progress on the stream');
    victim?.kill('SIGKILL');
    expect(await victim?.exited).toBe('SIGKILL');

    await Promise.race([streamed, new Promise((_, reject) => setTimeout(() => reject(new Error('the gRPC stream did not end after the recovery')), 150_000))]);
    const last = received.at(-1);
    expect(last?.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : undefined).toBe(TaskState.TASK_STATE_COMPLETED);
    // Exactly the stored sequence: same ids, same order, nothing twice, nothing missing.
    const stored = (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([id]) => id);
    expect(received.map(eventIdOf)).toEqual(stored);
    expect(received.map(progressOf).filter((n) => n !== undefined)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    const turn = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1')) as string) as { attempts: number };
    expect(turn.attempts).toBe(2);
  }, 300_000);
});
