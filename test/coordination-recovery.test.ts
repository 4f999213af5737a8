// Sub-agent coordination (issue 5) across real worker processes: how many assignments
// actually run at once (measured from the children's own turn records, not from what the
// gateway says it granted), that slots are granted first come first served, and that a
// worker killed under a coordinator's children is recovered without running any child twice
// at once; and that a worker process configured with roles (as deployments configure it, in
// an A2A_CONFIG file) stops a canceled coordinator's children. The gateway runs no worker of
// its own.
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject, StreamResponse, Task } from '../src/protocol/types.ts';
import { ROOT, spawnWorkerProcess, startTestGateway, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import {
  artifactText,
  cancelPropagation,
  client,
  executionIntervals,
  fanoutMessage,
  maxOverlap,
  statusText,
  storedEvents,
  turnRecords,
  type AssignmentView,
} from './support/coordination.ts';

const pidOf = (workerId: string): number => Number(/:(\d+):[^:]+$/.exec(workerId)?.[1]);

async function stopWorkers(workers: WorkerProcess[]): Promise<void> {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.kill('SIGKILL');
  await Promise.all(workers.map((w) => w.exited));
}

/** Each child's words are unique to its index, so the combined artifact shows the order. */
const wordsOf = (coordinator: number, index: number): string => `c${coordinator}i${index}a c${coordinator}i${index}b c${coordinator}i${index}c`;

async function checkCoordinator(
  api: ReturnType<typeof client>,
  gw: TestGateway,
  task: Task,
  coordinator: number,
  limit: number,
): Promise<{ observed: number; intervals: { start: number; end: number }[] }> {
  expect(task.status.state).toBe('TASK_STATE_COMPLETED');
  expect(statusText(task)).toBe('Combined 10 of 10 assignments (0 failed, 0 canceled).');
  const list = await api.assignments(task.id);
  expect(list).toHaveLength(10);
  expect(list.map((a) => a.state)).toEqual(Array(10).fill('completed'));
  // FIFO: the order slots were granted in is the order the assignments were made in.
  const byStart = [...list].sort((a, b) => (a.startOrder as number) - (b.startOrder as number));
  expect(byStart.map((a) => a.index)).toEqual([...Array(10).keys()]);
  expect(list.map((a) => a.startOrder)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
  for (const a of list) {
    const child = await api.getTask(a.taskId);
    expect(child.status.state).toBe('TASK_STATE_COMPLETED');
    expect(artifactText(child, 'stream')).toBe(wordsOf(coordinator, a.index));
  }
  expect(artifactText(task, 'combined')).toBe(list.map((a) => wordsOf(coordinator, a.index)).join(' '));
  const evidence = task.artifacts?.find((a) => a.name === 'combined')?.parts[1]?.data as JsonObject;
  expect((evidence.assignments as JsonObject[]).map((a) => a.taskId)).toEqual(list.map((a) => a.taskId));

  const intervals = await executionIntervals(gw, list.map((a) => a.taskId));
  const observed = maxOverlap(intervals);
  expect(observed, `coordinator ${coordinator}: children running at once`).toBeLessThanOrEqual(limit);
  expect(observed, `coordinator ${coordinator}: its children ran in parallel at some point`).toBeGreaterThan(1);
  return { observed, intervals };
}

describe('concurrency under load', () => {
  let gw: TestGateway;
  const workers: WorkerProcess[] = [];
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    gw = await startTestGateway({ name: 'coord-load', inProcessWorker: false });
    api = client(gw);
    // Four worker slots in all: three parked coordinators holding a slot each would leave one.
    const env = { A2A_WORKER_CONCURRENCY: '2', A2A_ADAPTER_OPTIONS: '{"stepMs":30}' };
    workers.push(...(await Promise.all([spawnWorkerProcess(gw.prefix, env), spawnWorkerProcess(gw.prefix, env)])));
  }, 60_000);

  afterAll(async () => {
    await stopWorkers(workers);
    await gw?.close();
  });

  const assignments = (coordinator: number) => Array.from({ length: 10 }, (_, i) => ({ text: `stream ${wordsOf(coordinator, i)}` }));

  it('3 coordinators x 10 assignments on 4 worker slots: at most 4 at once, FIFO, all combined in order', async () => {
    const sent = await Promise.all([0, 1, 2].map((c) => api.send(fanoutMessage({ assignments: assignments(c), review: false }))));
    const done = await Promise.all(sent.map((t) => api.waitForTerminal(t.id, 45_000)));
    const all: { start: number; end: number }[] = [];
    for (const [c, task] of done.entries()) {
      const { observed, intervals } = await checkCoordinator(api, gw, task, c, 4);
      console.log(`coordinator ${c} (maxParallel 4 by default): at most ${observed} of its children ran at once`);
      all.push(...intervals);
    }
    const overall = maxOverlap(all);
    console.log(`all 30 children on 4 worker slots: at most ${overall} ran at once`);
    expect(overall).toBeLessThanOrEqual(4);
  });

  it('maxParallel 2 holds per coordinator while more worker slots are free', async () => {
    const sent = await Promise.all([3, 4].map((c) => api.send(fanoutMessage({ assignments: assignments(c), maxParallel: 2, review: false }))));
    const done = await Promise.all(sent.map((t) => api.waitForTerminal(t.id, 45_000)));
    const all: { start: number; end: number }[] = [];
    for (const [i, task] of done.entries()) {
      const { observed, intervals } = await checkCoordinator(api, gw, task, i + 3, 2);
      console.log(`coordinator ${i + 3} (maxParallel 2): at most ${observed} of its children ran at once`);
      all.push(...intervals);
    }
    console.log(`both coordinators' 20 children on 4 worker slots: at most ${maxOverlap(all)} ran at once`);
  });
});

describe("a child's worker is SIGKILLed", () => {
  let gw: TestGateway;
  const workers: WorkerProcess[] = [];
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    // lockDurationMs 2000 and stalledIntervalMs 1000, here and in the spawned workers (harness defaults).
    gw = await startTestGateway({ name: 'coord-kill', inProcessWorker: false });
    api = client(gw);
    const env = { A2A_WORKER_CONCURRENCY: '2', A2A_ADAPTER_OPTIONS: '{"stepMs":100}' };
    workers.push(...(await Promise.all([spawnWorkerProcess(gw.prefix, env), spawnWorkerProcess(gw.prefix, env)])));
  }, 60_000);

  afterAll(async () => {
    await stopWorkers(workers);
    await gw?.close();
  });

  it('every child and the coordinator still complete, and no child ran twice at once', async () => {
    const coordinator = await api.send(fanoutMessage({ assignments: Array.from({ length: 4 }, () => ({ text: 'long 30' })), maxParallel: 4, review: false }));
    const list = await waitFor(
      async () => {
        const l = await api.assignments(coordinator.id);
        return l.length === 4 && l.every((a) => a.taskState === 'TASK_STATE_WORKING') ? l : undefined;
      },
      30_000,
      'all four children working',
    );
    // Let them make progress, then kill the worker running the most of them.
    await waitFor(async () => ((await turnRecords(gw, list[0]?.taskId as string))[0]?.steps?.length ?? 0) >= 3 || undefined, 30_000, 'progress');
    const holders = new Map<string, number>();
    for (const a of list) {
      const holder = await gw.redis.get(`${gw.prefix}:{${a.taskId}}:lease`);
      if (holder !== null) holders.set(a.taskId, pidOf(holder));
    }
    const counts = new Map<number, number>();
    for (const pid of holders.values()) counts.set(pid, (counts.get(pid) ?? 0) + 1);
    const victimPid = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
    const victim = workers.find((w) => w.pid === victimPid);
    const survivor = workers.find((w) => w.pid !== victimPid);
    expect(victim, `a worker process holds a child's lease (${JSON.stringify([...holders])})`).toBeDefined();
    const orphans = [...holders].filter(([, pid]) => pid === victimPid).map(([id]) => id);
    victim?.kill('SIGKILL');
    expect(await victim?.exited).toBe('SIGKILL');

    const done = await api.waitForTerminal(coordinator.id, 60_000);
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    expect(statusText(done)).toBe('Combined 4 of 4 assignments (0 failed, 0 canceled).');
    const after = await api.assignments(coordinator.id);
    expect(after.map((a: AssignmentView) => [a.state, a.taskState])).toEqual(Array(4).fill(['completed', 'TASK_STATE_COMPLETED']));

    for (const a of after) {
      const [record] = await turnRecords(gw, a.taskId);
      const child = await api.getTask(a.taskId);
      const orphaned = orphans.includes(a.taskId);
      // Recovered through stall detection by the surviving worker: a second attempt, not a reset.
      expect(record?.attempts, `child ${a.index}${orphaned ? ' (on the killed worker)' : ''}`).toBe(orphaned ? 2 : 1);
      if (orphaned) expect(pidOf(record?.workerId as string)).toBe(survivor?.pid);
      expect(artifactText(child, 'report')).toMatch(new RegExp(`^Completed 30 steps in \\d+ ms \\(attempt ${orphaned ? 2 : 1}\\)\\.$`));

      // No two runs interleaved, and the progress a re-run repeated was not stored again: the
      // stored progress counts 1..30 once, in order (steps below show the runs did not overlap).
      const progress = (await storedEvents(gw, a.taskId))
        .map((e: StreamResponse) => ('statusUpdate' in e ? (e.statusUpdate.status.message?.metadata?.progress as number | undefined) : undefined))
        .filter((p): p is number => p !== undefined);
      expect(progress).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      const steps = record?.steps ?? [];
      const lastOfFirst = Math.max(...steps.filter((s) => s.attempt === 1).map((s) => s.atMs));
      const firstOfSecond = Math.min(...steps.filter((s) => s.attempt === 2).map((s) => s.atMs));
      if (orphaned) expect(lastOfFirst).toBeLessThan(firstOfSecond);
    }
    expect(orphans.length).toBeGreaterThan(0);
  });
});

describe('a worker process with delegation roles in its config file', () => {
  let gw: TestGateway;
  const workers: WorkerProcess[] = [];
  let configFile: string;

  beforeAll(async () => {
    gw = await startTestGateway({ name: 'coord-roles', inProcessWorker: false });
    // Nested delegation.roles has no environment variable: it comes from a config file.
    configFile = join(tmpdir(), `${gw.prefix}.json`);
    await writeFile(configFile, JSON.stringify({ delegation: { roles: { broken: { adapter: join(ROOT, 'test/fixtures/failing-adapter.mjs') } } } }));
    workers.push(await spawnWorkerProcess(gw.prefix, { A2A_CONFIG: configFile }));
  }, 60_000);

  afterAll(async () => {
    await stopWorkers(workers);
    await gw?.close();
    await rm(configFile, { force: true });
  });

  it('cancels the running children of a canceled coordinator; queued ones never start', () => cancelPropagation(gw));
});
