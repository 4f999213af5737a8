// Agent output is paced per owner (limits.outputBytesPerSecond, limits.outputBurstBytes): a turn
// whose backend emits output faster than the rate waits for it before each chunk is stored,
// instead of loading Redis for everyone. The wait is the owner's alone (another owner's turn
// runs meanwhile), every chunk is still stored, and a cancel ends the wait at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';
import { openMonitor } from './support/monitor.ts';

const KIB = 1024;
const RATE = 64 * KIB;
const BURST = 64 * KIB;

interface Task {
  id: string;
  status: { state: string };
  artifacts?: { parts: { text?: string }[] }[];
}

let gw: TestGateway;
let issuer: TestIssuer;

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'output-pacing',
    config: {
      auth: { enabled: true, issuers: [issuer.config] },
      adapter: 'test/fixtures/flood-adapter.mjs',
      limits: {
        requestsPerSecond: 0,
        maxActiveTasks: 0,
        unauthenticatedPerSecond: 0,
        ingressBytesPerSecond: 0,
        storedBytesPerSecond: 0,
        maxRunningTurnsPerOwner: 0,
        maxRunningTurnsPerTenant: 0,
        outputBytesPerSecond: RATE,
        outputBurstBytes: BURST,
      },
    },
  });
});

afterAll(async () => {
  await gw?.close();
});

async function as(subject: string): Promise<Record<string, string>> {
  return { Authorization: `Bearer ${await issuer.token({ sub: subject })}` };
}

async function send(headers: Record<string, string>, text: string): Promise<string> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } }, headers);
  expect(body.error).toBeUndefined();
  return (body.result as { task: Task }).task.id;
}

async function getTask(headers: Record<string, string>, id: string): Promise<Task> {
  const { body } = await rpc(gw.jsonRpcUrl, 'GetTask', { id }, headers);
  expect(body.error).toBeUndefined();
  return body.result as Task;
}

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED']);

async function terminal(headers: Record<string, string>, id: string, timeoutMs = 30_000): Promise<Task> {
  return waitFor(async () => {
    const task = await getTask(headers, id);
    return TERMINAL.has(task.status.state) ? task : undefined;
  }, timeoutMs, `task ${id} to end`);
}

const storedBytes = (task: Task): number => (task.artifacts ?? []).flatMap((a) => a.parts).reduce((sum, part) => sum + (part.text?.length ?? 0), 0);

describe('agent output paced per owner', () => {
  it('a turn emitting past its owner\'s burst waits for the rate, stores every chunk, and leaves another owner alone', async () => {
    const alice = await as('alice');
    const bob = await as('bob');
    const startedAt = Date.now();
    // 16 x 32 KiB = 512 KiB: past the 64 KiB burst, the rest takes about 7 s at 64 KiB/s.
    const flood = await send(alice, 'flood 16 32');
    // Bob's small turn, sent while Alice's waits for her rate, ends while hers is still working.
    await waitFor(async () => storedBytes(await getTask(alice, flood)) > 0 || undefined, 10_000, 'alice output');
    const small = await send(bob, 'flood 2 1');
    const bobs = await terminal(bob, small);
    expect(bobs.status.state).toBe('TASK_STATE_COMPLETED');
    expect(storedBytes(bobs)).toBe(2 * KIB);
    expect((await getTask(alice, flood)).status.state).toBe('TASK_STATE_WORKING');

    const alices = await terminal(alice, flood);
    const elapsedMs = Date.now() - startedAt;
    expect(alices.status.state).toBe('TASK_STATE_COMPLETED');
    expect(storedBytes(alices)).toBe(16 * 32 * KIB);
    // (total - burst) / rate, with room for the chunks' JSON overhead not counted here.
    expect(elapsedMs).toBeGreaterThanOrEqual(((16 * 32 * KIB - BURST) / RATE) * 1000 * 0.9);
  }, 60_000);

  it('small outputs are charged after the fact, beside their append, and the rate still holds: the next output waits out the debt', async () => {
    const dave = await as('dave');
    const monitor = await openMonitor(gw.config.redisUrl);
    const charges: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua' && args.some((arg) => arg.startsWith(gw.prefix) && arg.includes('dave') && arg.endsWith(':bytes:output'))) charges.push(args);
    });
    const startedAt = Date.now();
    // 64 x 4 KiB = 256 KiB, each chunk under an eighth of the burst: about 3 s past the 64 KiB burst.
    const flood = await send(dave, 'flood 64 4');
    const task = await terminal(dave, flood);
    const elapsedMs = Date.now() - startedAt;
    monitor.disconnect();
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(storedBytes(task)).toBe(64 * 4 * KIB);
    // One chunk may be stored ahead of the rate (its charge is seen by the next one).
    expect(elapsedMs).toBeGreaterThanOrEqual(((64 * 4 * KIB - BURST - 4 * KIB) / RATE) * 1000 * 0.9);
    // Every chunk's take in Redis was a charge after the fact (takeToken's ARGV[4] '1'), none a
    // take that waits. The process's reserve paid a few: each top-up (a sixteenth of the burst,
    // one chunk here) needs the bucket to hold it beside its charge, so only within the burst.
    expect(charges.length).toBeGreaterThanOrEqual(64 - BURST / (2 * 4 * KIB));
    expect(charges.every((args) => args[0]?.toLowerCase() === 'evalsha' && args[2] === '1' && args[7] === '1')).toBe(true);
  }, 60_000);

  it('a cancel ends a turn waiting for its rate promptly', async () => {
    const carol = await as('carol');
    // 40 x 32 KiB: about 20 s of pacing.
    const flood = await send(carol, 'flood 40 32');
    await waitFor(async () => storedBytes(await getTask(carol, flood)) > 2 * 32 * KIB || undefined, 10_000, 'carol output past the burst');
    const canceledAt = Date.now();
    const { body } = await rpc(gw.jsonRpcUrl, 'CancelTask', { id: flood }, carol);
    expect(body.error).toBeUndefined();
    const task = await terminal(carol, flood, 10_000);
    expect(task.status.state).toBe('TASK_STATE_CANCELED');
    expect(Date.now() - canceledAt).toBeLessThan(10_000);
    expect(storedBytes(task)).toBeLessThan(40 * 32 * KIB);
  }, 60_000);
});
