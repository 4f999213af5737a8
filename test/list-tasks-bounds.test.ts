// ListTasks with bounded work and bounded pages (issue 14, items 3 and 6): the owner's index is
// read a chunk at a time and each task in its own slot; a call examines at most
// maxScannedEntries entries and returns at most maxPageBytes of tasks, ending the page early
// with a token to go on from; totals are the index's size, not a count of every task.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { TaskListing, type ListBounds, type ListCursor, type ListTasksQuery } from '../src/store/task-listing.ts';
import { createStoredTask, deletePrefix, REDIS_URL, rpc, startTestGateway, textMessage, uniquePrefix, waitFor, type TestGateway } from './support/harness.ts';
import { openMonitor } from './support/monitor.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';
import type { Task } from '../src/protocol/types.ts';

let redis: Redis;
let store: TaskStore;
let prefix: string;
let owners = 0;

const newOwner = (): Owner => ({ agent: 'default', tenant: '', subject: `lister-${(owners += 1)}` });

const query = (owner: Owner, extra: Partial<ListTasksQuery> = {}): ListTasksQuery => ({
  owner,
  contextId: undefined,
  state: undefined,
  statusTimestampAfterMs: undefined,
  pageSize: 50,
  cursor: undefined,
  historyLength: 0,
  includeArtifacts: false,
  ...extra,
});

/** Creates `count` tasks of `owner`, the i-th with index score `scoreOf(i)` (ties allowed), oldest first. */
async function seed(owner: Owner, count: number, options: { scoreOf?: (i: number) => number; text?: (i: number) => string } = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const taskId = `${owner.subject}-t${String(i).padStart(3, '0')}`;
    await createStoredTask(store, { taskId, contextId: `${owner.subject}-ctx`, owner, text: options.text?.(i) ?? `task ${i}` });
    ids.push(taskId);
  }
  const scoreOf = options.scoreOf ?? ((i: number) => 1_700_000_000_000 + i * 10);
  const index = store.keys.ownerTasks(ownerKeyOf(owner));
  for (const [i, id] of ids.entries()) await redis.zadd(index, scoreOf(i), id);
  return ids;
}

/** Every page of a listing, following nextPageToken (cursor) until there is none. */
async function allPages(listing: TaskListing, q: ListTasksQuery): Promise<{ pages: Awaited<ReturnType<TaskListing['list']>>[]; ids: string[] }> {
  const pages = [];
  let cursor: ListCursor | undefined;
  for (let i = 0; i < 200; i++) {
    const page = await listing.list({ ...q, cursor });
    pages.push(page);
    if (page.next === undefined) break;
    cursor = page.next;
  }
  return { pages, ids: pages.flatMap((p) => p.tasks.map((t) => t.id)) };
}

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  prefix = uniquePrefix('list-bounds');
  store = new TaskStore(redis, prefix);
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

const roomy: ListBounds = { maxPageBytes: 1 << 20, maxScannedEntries: 1_000 };

describe('ListTasks pages', () => {
  it('pages through tasks of one status timestamp (ties) newest id first, each task exactly once, with the kept total', async () => {
    const owner = newOwner();
    const ids = await seed(owner, 23, { scoreOf: (i) => 1_700_000_000_000 + (i < 20 ? 0 : i) });
    const { pages, ids: listed } = await allPages(new TaskListing(store, roomy), query(owner, { pageSize: 4 }));
    const expected = [...ids.slice(20).reverse(), ...ids.slice(0, 20).sort().reverse()];
    expect(listed).toEqual(expected);
    for (const page of pages) expect(page.total).toBe(23);
    expect(pages.at(-1)?.next).toBeUndefined();
    expect(pages).toHaveLength(6);
  });

  it('a page whose tasks pass maxPageBytes ends early with a token; the next pages bring the rest', async () => {
    const owner = newOwner();
    const ids = await seed(owner, 6, { text: (i) => `${i}`.repeat(10_000) });
    const listing = new TaskListing(store, { maxPageBytes: 25_000, maxScannedEntries: 1_000 });
    const first = await listing.list(query(owner, { pageSize: 50, historyLength: -1 }));
    expect(first.tasks).toHaveLength(2);
    expect(first.cutShort).toBe('bytes');
    expect(first.next).toBeDefined();
    const { pages, ids: listed } = await allPages(listing, query(owner, { pageSize: 50, historyLength: -1 }));
    expect(listed).toEqual([...ids].reverse());
    for (const page of pages) expect(JSON.stringify(page.tasks).length).toBeLessThan(25_000 + 2_000);
    // Without histories the same tasks fit in one page.
    const light = await listing.list(query(owner, { pageSize: 50 }));
    expect(light.tasks).toHaveLength(6);
    expect(light.next).toBeUndefined();
  });

  it('a page of large tasks reads about what it keeps: the first read takes two, the next what the room left holds', async () => {
    const owner = newOwner();
    const ids = await seed(owner, 12, { text: (i) => `${i % 10}`.repeat(100_000) });
    const listing = new TaskListing(store, { maxPageBytes: 250_000, maxScannedEntries: 1_000 });
    const monitor = await openMonitor(redis);
    const historyReads = new Set<string>();
    monitor.on('monitor', (_time: string, args: string[]) => {
      const key = args[1] ?? '';
      if ((args[0] ?? '').toLowerCase() === 'lrange' && key.startsWith(`${prefix}:{${owner.subject}-`)) historyReads.add(key);
    });
    try {
      const page = await listing.list(query(owner, { pageSize: 50, historyLength: -1 }));
      expect(page.tasks.map((task) => task.id)).toEqual(ids.slice(-2).reverse());
      expect(page.cutShort).toBe('bytes');
      await redis.ping();
      await waitFor(() => (historyReads.size >= 3 ? true : undefined), 5_000, 'the history reads');
      // Two kept, a third read to learn it does not fit; eight read at once decoded four times the page.
      expect(historyReads.size).toBe(3);
    } finally {
      monitor.disconnect();
    }
  });

  it('a single task larger than the page budget is still listed, its history trimmed to fit', async () => {
    const owner = newOwner();
    const [id] = await seed(owner, 1, { text: () => 'x'.repeat(50_000) });
    const page = await new TaskListing(store, { maxPageBytes: 10_000, maxScannedEntries: 1_000 }).list(query(owner, { historyLength: -1 }));
    expect(page.tasks.map((t) => t.id)).toEqual([id]);
    expect(page.tasks[0]?.history ?? []).toEqual([]);
    expect(page.next).toBeUndefined();
  });

  it('a status filter examines at most maxScannedEntries per call: short (even empty) pages with a token, every match found', async () => {
    const owner = newOwner();
    const ids = await seed(owner, 30);
    // The two oldest are canceled; the 28 newer ones are SUBMITTED.
    for (const id of ids.slice(0, 2)) expect((await store.gateway.cancelTask(id, owner, new Date())).kind).toBe('canceled');
    const index = store.keys.ownerTasks(ownerKeyOf(owner));
    for (const [i, id] of ids.entries()) await redis.zadd(index, 1_700_000_000_000 + i * 10, id);
    const bounded = new TaskListing(store, { maxPageBytes: 1 << 20, maxScannedEntries: 10 });
    const q = query(owner, { state: 'TASK_STATE_CANCELED', pageSize: 5 });
    const first = await bounded.list(q);
    expect(first.tasks).toEqual([]);
    expect(first.scanned).toBeLessThanOrEqual(10);
    expect(first.cutShort).toBe('scan');
    expect(first.next).toBeDefined();
    // Not counted past the bound: the window's size stands in, an upper bound, carried on.
    expect(first.total).toBe(30);
    const { pages, ids: listed } = await allPages(bounded, q);
    expect(listed).toEqual([ids[1], ids[0]]);
    for (const page of pages) {
      expect(page.scanned).toBeLessThanOrEqual(10);
      expect(page.total).toBe(30);
    }
    // Within the bound the filtered total is exact.
    const counted = await new TaskListing(store, roomy).list(q);
    expect(counted.tasks.map((t) => t.id)).toEqual([ids[1], ids[0]]);
    expect(counted.total).toBe(2);
    expect(counted.next).toBeUndefined();
  });

  it('an entry whose task expired, or that names another owner’s task, is left out and leaves the index; the total follows', async () => {
    const owner = newOwner();
    const other = newOwner();
    const ids = await seed(owner, 3);
    const [foreign] = await seed(other, 1);
    const index = store.keys.ownerTasks(ownerKeyOf(owner));
    await redis.zadd(index, 1_700_000_000_005, 'expired-task', 1_700_000_000_006, foreign as string);
    const page = await new TaskListing(store, roomy).list(query(owner));
    expect(page.tasks.map((t) => t.id)).toEqual([...ids].reverse());
    expect(page.total).toBe(3);
    expect(await redis.zscore(index, 'expired-task')).toBeNull();
    expect(await redis.zscore(index, foreign as string)).toBeNull();
    // The other owner's own index still has its task.
    expect(await redis.zscore(store.keys.ownerTasks(ownerKeyOf(other)), foreign as string)).not.toBeNull();
  });

  it('statusTimestampAfter keeps tasks at or after the timestamp, and the total counts the window', async () => {
    const owner = newOwner();
    const ids = await seed(owner, 5);
    const page = await new TaskListing(store, roomy).list(query(owner, { statusTimestampAfterMs: 1_700_000_000_020 }));
    expect(page.tasks.map((t) => t.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(page.total).toBe(3);
  });

  it('a listed task is what GetTask reads: status, metadata (the gateway’s cancellation record), history', async () => {
    const owner = newOwner();
    const [id] = await seed(owner, 1);
    expect((await store.gateway.cancelTask(id as string, owner, new Date())).kind).toBe('canceled');
    const read = await store.gateway.readTask(id as string, owner, -1);
    const page = await new TaskListing(store, roomy).list(query(owner, { historyLength: -1, includeArtifacts: true }));
    const expected = { ...read?.task, artifacts: read?.task.artifacts ?? [] };
    expect(page.tasks).toEqual([expected]);
    expect(JSON.stringify(page.tasks[0]?.metadata)).toContain('cancellation');
  });

  it('artifacts only on request; history only as asked', async () => {
    const owner = newOwner();
    await seed(owner, 2);
    const listing = new TaskListing(store, roomy);
    const bare = await listing.list(query(owner));
    for (const task of bare.tasks) {
      expect(task.artifacts).toBeUndefined();
      expect(task.history).toBeUndefined();
    }
    const full = await listing.list(query(owner, { includeArtifacts: true, historyLength: 1 }));
    for (const task of full.tasks) {
      expect(task.artifacts).toEqual([]);
      expect(task.history).toHaveLength(1);
    }
  });
});

describe('ListTasks bounds through the bindings', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      name: 'list-bounds-gw',
      inProcessWorker: false,
      config: { limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, maxListPageBytes: 8_000, maxConcurrentListsPerOwner: 2 } },
    });
  });

  afterAll(async () => {
    await gw.close();
  });

  it('JSON-RPC: a page past limits.maxListPageBytes comes back short with a nextPageToken that continues it', async () => {
    const contextId = `ctx-${Date.now()}`;
    for (let i = 0; i < 4; i++) {
      const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(`echo ${String(i).repeat(3_000)}`, { contextId }), configuration: { returnImmediately: true } });
      expect(sent.status).toBe(200);
    }
    const listed = await rpc(gw.jsonRpcUrl, 'ListTasks', { contextId, historyLength: 10, pageSize: 10 });
    const page = listed.body.result as { tasks: Task[]; nextPageToken: string; totalSize: number; pageSize: number };
    expect(page.totalSize).toBe(4);
    expect(page.pageSize).toBe(10);
    expect(page.tasks.length).toBeGreaterThan(0);
    expect(page.tasks.length).toBeLessThan(4);
    expect(page.nextPageToken).not.toBe('');
    const seen = new Set(page.tasks.map((t) => t.id));
    let token = page.nextPageToken;
    while (token !== '') {
      const next = (await rpc(gw.jsonRpcUrl, 'ListTasks', { contextId, historyLength: 10, pageSize: 10, pageToken: token })).body.result as typeof page;
      for (const task of next.tasks) {
        expect(seen.has(task.id)).toBe(false);
        seen.add(task.id);
      }
      token = next.nextPageToken;
    }
    expect(seen.size).toBe(4);
  });

  it('a page token with a forged total is refused (-32602) naming pageToken', async () => {
    const token = Buffer.from(JSON.stringify(['1700000000000', 'x', -1])).toString('base64url');
    const answer = await rpc(gw.jsonRpcUrl, 'ListTasks', { pageToken: token });
    expect((answer.body.error as { code: number }).code).toBe(-32602);
    expect(JSON.stringify(answer.body.error)).toContain('pageToken');
  });
});

describe('ListTasks calls of one owner in flight at once', () => {
  // A Redis of this file's own, stopped while the calls arrive: the first ones wait for it, so
  // how many are in flight at once does not depend on how fast the machine answers.
  let own: OwnRedis;
  let gw: TestGateway;

  beforeAll(async () => {
    own = await startOwnRedis();
    gw = await startTestGateway({
      name: 'list-concurrency',
      inProcessWorker: false,
      config: { redisUrl: own.url, limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, maxConcurrentListsPerOwner: 2, ingressBytesPerSecond: 0, storedBytesPerSecond: 0 } },
    });
  });

  afterAll(async () => {
    own?.resume();
    await gw?.close();
    await own?.stop();
  });

  it('past limits.maxConcurrentListsPerOwner get 429 TOO_MANY_CONCURRENT_LISTS at once; the others are answered', async () => {
    own.pause();
    let answered = 0;
    const calls = Array.from({ length: 20 }, () =>
      rpc(gw.jsonRpcUrl, 'ListTasks', { historyLength: 10, pageSize: 100 }).then((answer) => {
        answered += 1;
        return answer;
      }),
    );
    try {
      // Refused without waiting for Redis: the 18 past the cap answer while it is stopped.
      await waitFor(() => answered >= 18, 15_000, 'the calls past the cap to be refused');
    } finally {
      own.resume();
    }
    const answers = await Promise.all(calls);
    const reasons = answers.map((a) => (a.body.error === undefined ? 'ok' : JSON.stringify(a.body.error).includes('TOO_MANY_CONCURRENT_LISTS') ? 'busy' : 'other'));
    expect(reasons.filter((r) => r === 'ok')).toHaveLength(2);
    expect(reasons.filter((r) => r === 'busy')).toHaveLength(18);
    expect(answers.find((a) => a.body.error !== undefined)?.status).toBe(429);
    // Once they are answered, the owner may list again.
    expect((await rpc(gw.jsonRpcUrl, 'ListTasks', {})).body.error).toBeUndefined();
  });
});
