// Appends are idempotent per turn run (DESIGN.md, Redis): a turn run again from the top — its
// worker killed after it had emitted, or a coordinator's resumed run lost after its combined
// artifact — cannot store an event its earlier run already stored. Found by the chaos suite as
// a coordinator's artifact stored twice; reproduced here deterministically with real worker
// processes killed by SIGKILL at the moment the events are in the replay buffer.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isRunning, rpc, spawnWorkerProcess, startTestGateway, textMessage, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';

const ADAPTER = 'test/fixtures/rerun-adapter.mjs';
let gw: TestGateway;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ name: 'rerun', inProcessWorker: false, config: { adapter: ADAPTER } });
});

async function killAll(): Promise<void> {
  await replacement;
  for (const worker of workers.splice(0)) worker.kill('SIGKILL');
}

// A failed test may leave a turn hanging on a worker: the next one starts from none.
afterEach(async ({ task }) => {
  if (task.result?.state === 'fail') await killAll();
});

afterAll(async () => {
  await killAll();
  await gw?.close();
});

const spawnWorker = async (): Promise<WorkerProcess> => {
  const started = await spawnWorkerProcess(gw.prefix, { A2A_ADAPTER: ADAPTER });
  workers.push(started);
  return started;
};

/** A worker started by the previous test while it waited for its re-run (undefined if it failed to start). */
let replacement: Promise<WorkerProcess | undefined> = Promise.resolve(undefined);

/**
 * Two workers before a turn starts: whichever takes it is killed, the other runs it again. They
 * stay up for the next test (a killed worker is replaced while its turn waits to be run again),
 * so a test waits for no worker start-up of its own, where one after the other it waited for two.
 */
async function twoWorkersRunning(): Promise<void> {
  await replacement;
  const missing = Math.max(0, 2 - workers.filter(isRunning).length);
  await Promise.all(Array.from({ length: missing }, spawnWorker));
}

/** SIGKILLs the worker that holds the task's lease (its turn hangs on the first attempt). */
async function killHolder(taskId: string): Promise<void> {
  const lease = await gw.redis.get(`${gw.prefix}:{${taskId}}:lease`);
  const holder = workers.find((w) => isRunning(w) && lease?.includes(`:${w.pid}:`) === true);
  expect(holder, `the lease's holder among the workers (lease ${lease})`).toBeDefined();
  (holder as WorkerProcess).kill('SIGKILL');
  await (holder as WorkerProcess).exited;
  replacement = spawnWorker().catch(() => undefined);
}

async function events(taskId: string): Promise<{ id: string; json: string }[]> {
  return (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([id, fields]) => ({ id, json: fields[1] ?? '' }));
}

async function start(text: string): Promise<string> {
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  return (reply.body.result as { task: { id: string } }).task.id;
}

async function state(taskId: string): Promise<string | null> {
  return gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'state');
}

/** Events that are not the gateway's own (task snapshot, submitted/working, final status). */
/** The runtime's own note to watchers that the turn resumes after a lost worker (not the adapter's). */
const resumptionNote = (json: string): boolean => (JSON.parse(json) as { statusUpdate?: { metadata?: { a2aGateway?: { workerLost?: unknown } } } }).statusUpdate?.metadata?.a2aGateway?.workerLost !== undefined;

const adapterEvents = (all: { json: string }[]): string[] =>
  all
    .filter((e) => !resumptionNote(e.json))
    .map((e) => JSON.parse(e.json) as { artifactUpdate?: { artifact: { artifactId: string; parts: { text?: string }[] } }; statusUpdate?: { status: { message?: { parts: { text?: string }[] } } } })
    .flatMap((e) => {
      if (e.artifactUpdate !== undefined) return [`artifact ${e.artifactUpdate.artifact.artifactId}: ${e.artifactUpdate.artifact.parts.map((p) => p.text).join('')}`];
      const text = e.statusUpdate?.status.message?.parts.map((p) => p.text).join('');
      return text === undefined ? [] : [`status: ${text}`];
    });

describe('a turn run again after its worker was killed', () => {
  it('stores nothing twice that its earlier run stored, and its task completes', async () => {
    await twoWorkersRunning();
    const taskId = await start('repeat');
    await waitFor(async () => ((await events(taskId)).some((e) => e.json.includes('"lastChunk":true')) ? true : undefined), 20_000, 'the first run to emit');
    await killHolder(taskId);
    await waitFor(async () => ((await state(taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 30_000, 'the re-run to complete the task');
    const attempts = JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1')) as string).attempts;
    expect(attempts).toBe(2);
    expect(adapterEvents(await events(taskId)).filter((e) => !e.startsWith('status: done'))).toEqual(['status: halfway', 'artifact result: the ', 'artifact result: answer']);
    // Watchers were told once that the turn resumes on another worker.
    expect((await events(taskId)).filter((e) => resumptionNote(e.json))).toHaveLength(1);
    const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { artifacts: { parts: { text: string }[] }[] };
    // The stored artifact was not built twice either.
    expect(task.artifacts[0]?.parts.map((p) => p.text).join('')).toBe('the answer');
  });

  it('that says something new appends it (a re-run is never silenced past what it repeats)', async () => {
    await twoWorkersRunning();
    const taskId = await start('diverge');
    await waitFor(async () => ((await events(taskId)).some((e) => e.json.includes('(attempt 1)')) ? true : undefined), 20_000, 'the first run to emit');
    await killHolder(taskId);
    await waitFor(async () => ((await state(taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 30_000, 'the re-run to complete the task');
    expect(adapterEvents(await events(taskId)).filter((e) => !e.startsWith('status: done'))).toEqual([
      'status: halfway',
      'artifact result: the ',
      'artifact result: answer',
      'artifact result:  (attempt 1)',
      // Where the re-run diverges it sends the artifact whole, as it built it.
      'artifact result: the answer (attempt 2)',
    ]);
    const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { artifacts: { parts: { text: string }[] }[] };
    expect(task.artifacts[0]?.parts.map((p) => p.text).join('')).toBe('the answer (attempt 2)');
  });

  it('that repeats the start of a reply and then diverges replaces the reply instead of splicing it', async () => {
    await twoWorkersRunning();
    const taskId = await start('reply');
    await waitFor(async () => ((await events(taskId)).some((e) => e.json.includes(' w3')) ? true : undefined), 20_000, 'the first run to emit');
    await killHolder(taskId);
    await waitFor(async () => ((await state(taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 30_000, 'the re-run to complete the task');
    const updates = (await events(taskId))
      .map((e) => (JSON.parse(e.json) as { artifactUpdate?: { append: boolean; artifact: { parts: { text: string }[] } } }).artifactUpdate)
      .filter((u) => u !== undefined)
      .map((u) => `${u.append ? '+' : '='}${u.artifact.parts.map((p) => p.text).join('')}`);
    // The first word was not stored twice; the divergence arrives whole, then the rest.
    expect(updates).toEqual(['=w1', '+ w2', '+ w3', '=w1 x2', '+ x3']);
    const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId })).body.result as { artifacts: { parts: { text: string }[] }[] };
    expect(task.artifacts[0]?.parts.map((p) => p.text).join('')).toBe('w1 x2 x3');
  });
});

describe("a coordinator's resumed run lost after its combined artifact", () => {
  it('is run again and the combined artifact is stored once', async () => {
    await twoWorkersRunning();
    const taskId = await start('coordinate');
    await waitFor(async () => ((await events(taskId)).some((e) => e.json.includes('"artifactId":"combined"')) ? true : undefined), 30_000, 'the resumed run to emit its combined artifact');
    await killHolder(taskId);
    await waitFor(async () => ((await state(taskId)) === 'TASK_STATE_COMPLETED' ? true : undefined), 30_000, 'the coordinator to complete');
    const combined = adapterEvents(await events(taskId)).filter((e) => e.startsWith('artifact combined'));
    expect(combined).toEqual(['artifact combined: combined 2']);
  });
});
