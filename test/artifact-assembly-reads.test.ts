// The assembly thread reads large tasks itself, from the sources gateways open
// (src/tasks/artifact-assembly.ts): a missing task reads as missing, a thread that died is
// started again with its sources, a lost Redis reads as one (503 UNAVAILABLE, not 500), and
// artifacts already let go are refused with what happened. The happy path, byte for byte, is in
// test/large-task-answers.test.ts and test/large-task-answer-paths.test.ts.
import type { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { toA2AError } from '../src/bindings/errors.ts';
import { RedisUnavailableError } from '../src/redis/connection.ts';
import { artifactAssembly } from '../src/tasks/artifact-assembly.ts';
import { REDIS_URL, uniquePrefix } from './support/harness.ts';

const reads = artifactAssembly.openReads({ target: { redisUrl: REDIS_URL, redisClusterNodes: [] }, policy: {}, keyPrefix: uniquePrefix('assembly-reads') });
const unreachable = artifactAssembly.openReads({ target: { redisUrl: 'redis://127.0.0.1:1', redisClusterNodes: [] }, policy: { outageGraceMs: 200 }, keyPrefix: 'nowhere' });

afterAll(() => {
  reads.close();
  unreachable.close();
});

describe('reads on the assembly thread', () => {
  it('a task that does not exist reads as missing', async () => {
    expect(await reads.read('no-such-task', 'owner', undefined)).toBeUndefined();
  });

  it('a thread that died is started again with the sources open', async () => {
    expect(await reads.read('no-such-task', 'owner', undefined)).toBeUndefined();
    const thread = (artifactAssembly as unknown as { worker: Worker }).worker;
    await thread.terminate();
    expect(await reads.read('no-such-task', 'owner', undefined)).toBeUndefined();
    expect((artifactAssembly as unknown as { worker: Worker }).worker).not.toBe(thread);
  });

  it('a Redis lost past its grace period is a RedisUnavailableError, answered 503 UNAVAILABLE', async () => {
    const failure = await unreachable.read('any', 'owner', undefined).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RedisUnavailableError);
    expect(toA2AError(failure).kind).toBe('UNAVAILABLE');
  });

  it('artifacts let go are refused with what happened', async () => {
    await expect(artifactAssembly.assembleHeld(987_654)).rejects.toThrow(/let go/);
  });
});
