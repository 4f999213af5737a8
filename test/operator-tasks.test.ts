// Operators' view of every owner's tasks (src/operator, the operator operations): the list
// across owners from the recent-tasks index (filters, paging, at most EXAMINED_PER_PAGE index
// entries per call, hints of expired tasks dropped, pruning by retention and size), behind
// a2a:operator; an operator sees its own tenant only (the default tenant's too), every tenant
// with a2a:platform; a read-only operator looks and cannot act; inspect, watch, and cancel of
// another owner's task with the operator recorded on it. Bad input is refused and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { EXAMINED_PER_PAGE } from '../src/operator/operator-tasks.ts';
import { RecentTaskIndex } from '../src/store/recent-tasks.ts';
import { expectUnchanged, REDIS_URL, startTestGateway, textMessage, uniquePrefix, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let gw: TestGateway;
let issuer: TestIssuer;
const tokens = { alice: '', bob: '', carol: '', operator: '', acmeOperator: '', defaultAdmin: '', acmeViewer: '', viewer: '' };
/** Tasks by who sent them: alice and bob in tenant acme, carol in globex. */
const tasks: Record<string, { id: string; contextId: string }> = {};

interface Summary {
  id: string;
  state: string;
  agent: string;
  tenant: string;
  owner: string;
  contextId: string;
}
interface Page {
  tasks: Summary[];
  nextPageToken: string;
  examined: number;
}

async function call(token: string, path: string, init: { method?: string; query?: Record<string, string> } = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const url = new URL(`${gw.url}/a2a/rest${path}`);
  for (const [name, value] of Object.entries(init.query ?? {})) url.searchParams.set(name, value);
  const response = await fetch(url, { method: init.method ?? 'GET', headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function send(token: string, text: string, extra: Record<string, unknown> = {}): Promise<{ id: string; contextId: string }> {
  const response = await fetch(gw.jsonRpcUrl, {
    method: 'POST',
    headers: { 'A2A-Version': '1.0', 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: textMessage(text, extra), configuration: { returnImmediately: true } } }),
  });
  const body = (await response.json()) as { result?: { task?: { id: string; contextId: string } } };
  if (body.result?.task === undefined) throw new Error(`SendMessage failed: ${JSON.stringify(body)}`);
  return body.result.task;
}

const list = async (token: string, query: Record<string, string> = {}): Promise<Page> => {
  const { status, body } = await call(token, '/operator/tasks', { query });
  expect(status, JSON.stringify(body)).toBe(200);
  return body as unknown as Page;
};

/** Every page of a listing, following nextPageToken. */
async function listAll(token: string, query: Record<string, string>): Promise<Summary[]> {
  const all: Summary[] = [];
  let pageToken = '';
  for (let pages = 0; pages < 50; pages++) {
    const page = await list(token, { ...query, ...(pageToken === '' ? {} : { pageToken }) });
    all.push(...page.tasks);
    pageToken = page.nextPageToken;
    if (pageToken === '') return all;
  }
  throw new Error('more than 50 pages');
}

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'operator-tasks',
    config: { auth: { enabled: true, issuers: [issuer.config] }, shutdownGraceMs: 0, console: { recentTasksFlushMs: 20 } },
    adapterOptions: { stepMs: 50 },
  });
  tokens.alice = await issuer.token({ sub: 'alice', tenant: 'acme' });
  tokens.bob = await issuer.token({ sub: 'bob', tenant: 'acme' });
  tokens.carol = await issuer.token({ sub: 'carol', tenant: 'globex' });
  tokens.operator = await issuer.token({ sub: 'ops', scope: 'a2a:admin a2a:platform' });
  tokens.acmeOperator = await issuer.token({ sub: 'acme-ops', tenant: 'acme', scope: 'a2a:admin' });
  tokens.defaultAdmin = await issuer.token({ sub: 'default-ops', scope: 'a2a:admin' });
  tokens.acmeViewer = await issuer.token({ sub: 'acme-viewer', tenant: 'acme', scope: 'a2a:operator' });
  tokens.viewer = await issuer.token({ sub: 'viewer', scope: 'a2a:operator a2a:platform' });
  tasks.alice = await send(tokens.alice, 'echo from alice');
  tasks.bob = await send(tokens.bob, 'echo from bob');
  tasks.carol = await send(tokens.carol, 'echo from carol');
  tasks.bobLong = await send(tokens.bob, 'long 1000');
  // Everything indexed (the index is written a flush after each task's own write) and the echoes finished.
  await waitFor(async () => {
    const completed = await list(tokens.operator, { state: 'TASK_STATE_COMPLETED' });
    const every = await list(tokens.operator);
    return (completed.tasks.length === 3 && every.tasks.length === 4) || undefined;
  });
});

afterAll(async () => {
  await gw?.close();
});

describe('ListOperatorTasks', () => {
  it("lists every owner's tasks of every tenant to a platform operator, most recently changed first", async () => {
    const page = await list(tokens.operator);
    const ids = page.tasks.map((task) => task.id);
    expect(ids.sort()).toEqual(Object.values(tasks).map((task) => task.id).sort());
    const alice = page.tasks.find((task) => task.id === tasks.alice?.id);
    expect(alice).toMatchObject({ agent: 'default', tenant: 'acme', state: 'TASK_STATE_COMPLETED', contextId: tasks.alice?.contextId });
    expect(alice?.owner).toMatch(/alice$/);
    const changed = page.tasks.map((task) => Date.parse((task as unknown as { changedAt: string }).changedAt));
    expect(changed).toEqual([...changed].sort((a, b) => b - a));
  });

  it('filters by owner, tenant, state, context, agent and change time', async () => {
    const byOwner = await list(tokens.operator, { owner: (await list(tokens.operator)).tasks.find((t) => t.id === tasks.bob?.id)?.owner as string });
    expect(byOwner.tasks.map((t) => t.id).sort()).toEqual([tasks.bob?.id, tasks.bobLong?.id].sort());
    expect((await list(tokens.operator, { ownerTenant: 'globex' })).tasks.map((t) => t.id)).toEqual([tasks.carol?.id]);
    expect((await list(tokens.operator, { state: 'TASK_STATE_WORKING' })).tasks.map((t) => t.id)).toEqual([tasks.bobLong?.id]);
    expect((await list(tokens.operator, { contextId: tasks.alice?.contextId as string })).tasks.map((t) => t.id)).toEqual([tasks.alice?.id]);
    expect((await list(tokens.operator, { agent: 'no-such-agent' })).tasks).toEqual([]);
    expect((await list(tokens.operator, { changedAfter: new Date(Date.now() + 60_000).toISOString().replace(/\.\d+Z$/, 'Z') })).tasks).toEqual([]);
    expect((await list(tokens.operator, { changedBefore: '2000-01-01T00:00:00Z' })).tasks).toEqual([]);
  });

  it('pages through every task once, pageSize at a time', async () => {
    const paged = await listAll(tokens.operator, { pageSize: '1' });
    expect(paged.map((t) => t.id).sort()).toEqual(Object.values(tasks).map((t) => t.id).sort());
  });

  it("shows a tenant's operator that tenant's tasks only, and another tenant's task as missing", async () => {
    const page = await list(tokens.acmeOperator);
    expect(page.tasks.map((t) => t.id).sort()).toEqual([tasks.alice?.id, tasks.bob?.id, tasks.bobLong?.id].sort());
    expect((await call(tokens.acmeOperator, '/operator/tasks', { query: { ownerTenant: 'globex' } })).status).toBe(403);
    expect((await call(tokens.acmeOperator, `/operator/tasks/${tasks.carol?.id}`)).status).toBe(404);
    expect((await call(tokens.acmeOperator, `/operator/tasks/${tasks.carol?.id}:cancel`, { method: 'POST' })).status).toBe(404);
    expect((await call(tokens.acmeOperator, '/operator/tasks:watch')).status).toBe(403);
  });

  it("shows the default tenant's admin, without a2a:platform, the default tenant's tasks only", async () => {
    expect((await list(tokens.defaultAdmin)).tasks).toEqual([]);
    expect((await call(tokens.defaultAdmin, '/operator/tasks', { query: { ownerTenant: 'acme' } })).status).toBe(403);
    expect((await call(tokens.defaultAdmin, `/operator/tasks/${tasks.alice?.id}`)).status).toBe(404);
    expect((await call(tokens.defaultAdmin, `/operator/tasks/${tasks.alice?.id}:subscribe`)).status).toBe(404);
    expect((await call(tokens.defaultAdmin, `/operator/tasks/${tasks.bobLong?.id}:cancel`, { method: 'POST' })).status).toBe(404);
    const watch = await call(tokens.defaultAdmin, '/operator/tasks:watch');
    expect(watch.status).toBe(403);
    expect(JSON.stringify(watch.body)).toContain('a2a:platform');
  });

  it('lets a read-only operator list and inspect within its reach, and refuses it every action', async () => {
    expect((await list(tokens.acmeViewer)).tasks.map((t) => t.id).sort()).toEqual([tasks.alice?.id, tasks.bob?.id, tasks.bobLong?.id].sort());
    expect((await call(tokens.acmeViewer, `/operator/tasks/${tasks.alice?.id}`)).status).toBe(200);
    expect((await call(tokens.acmeViewer, `/operator/tasks/${tasks.carol?.id}`)).status).toBe(404);
    expect((await list(tokens.viewer)).tasks.map((t) => t.id).sort()).toEqual(Object.values(tasks).map((t) => t.id).sort());
    for (const token of [tokens.acmeViewer, tokens.viewer]) {
      const cancel = await call(token, `/operator/tasks/${tasks.bobLong?.id}:cancel`, { method: 'POST' });
      expect(cancel.status).toBe(403);
      expect(JSON.stringify(cancel.body)).toContain('"requiredScope":"a2a:admin"');
      const replay = await call(token, '/push/deadLetters/some-letter:replay', { method: 'POST' });
      expect(replay.status).toBe(403);
      expect(JSON.stringify(replay.body)).toContain('"requiredScope":"a2a:admin"');
      // Nor is it an A2A caller: reading a task by its id needs a2a:read.
      expect((await call(token, `/tasks/${tasks.alice?.id}`)).status).toBe(403);
    }
    expect((await list(tokens.operator, { state: 'TASK_STATE_WORKING' })).tasks.map((t) => t.id)).toEqual([tasks.bobLong?.id]);
  });

  it(`looks at no more than ${EXAMINED_PER_PAGE} index entries per page, and drops those of tasks that are gone`, async () => {
    const key = `${gw.prefix}:{ops}:recent`;
    const future = Date.now() + 3_600_000;
    const ghosts: (string | number)[] = [];
    for (let i = 0; i < EXAMINED_PER_PAGE + 100; i++) ghosts.push(future + i, `ghost-${String(i).padStart(4, '0')}`);
    await gw.redis.zadd(key, ...ghosts);
    const first = await list(tokens.operator);
    expect(first.examined).toBe(EXAMINED_PER_PAGE);
    expect(first.tasks).toEqual([]);
    expect(first.nextPageToken).not.toBe('');
    // The ghosts it looked at are gone from the index; the next page finds the rest and then the real tasks.
    expect(await gw.redis.zcard(key)).toBe(100 + Object.keys(tasks).length);
    const second = await list(tokens.operator, { pageToken: first.nextPageToken });
    expect(second.tasks.map((t) => t.id).sort()).toEqual(Object.values(tasks).map((t) => t.id).sort());
    expect(await gw.redis.zcard(key)).toBe(Object.keys(tasks).length);
  });
});

describe('InspectOperatorTask, WatchOperatorTasks and CancelOperatorTask', () => {
  it("inspects another owner's task: the task, tasks inspect's reading and its timeline", async () => {
    const { status, body } = await call(tokens.operator, `/operator/tasks/${tasks.alice?.id}`);
    expect(status).toBe(200);
    const view = body as { task: { id: string; artifacts?: unknown[] }; inspection: { subject: string; agent: string; turns: unknown[] }; timeline: { entries: { event: Record<string, unknown> }[] } };
    expect(view.task.id).toBe(tasks.alice?.id);
    expect(view.task.artifacts).toHaveLength(1);
    expect(view.inspection.subject).toMatch(/alice$/);
    expect(view.inspection.turns).toHaveLength(1);
    expect(view.timeline.entries[0]?.event.task).toBeDefined();
    expect(view.timeline.entries.at(-1)?.event.statusUpdate).toMatchObject({ status: { state: 'TASK_STATE_COMPLETED' } });
  });

  it("shows a coordinator's sub-agent tree, each child with its assignment and task state", async () => {
    const coordinator = await send(tokens.carol, 'fanout 2 a b');
    const view = await waitFor(async () => {
      const { body } = await call(tokens.operator, `/operator/tasks/${coordinator.id}`);
      const read = body as { task: { status: { state: string } }; subAgents: { children: { taskId: string; role: string; state?: string; assignmentState: string }[]; truncated: boolean } };
      return read.task.status.state === 'TASK_STATE_COMPLETED' ? read : undefined;
    });
    expect(view.subAgents.truncated).toBe(false);
    expect(view.subAgents.children.length).toBeGreaterThanOrEqual(2);
    for (const child of view.subAgents.children) {
      expect(child.state).toBe('TASK_STATE_COMPLETED');
      expect(child.assignmentState).toBeTruthy();
      // Each child is a task of the coordinator's owner, and inspectable in turn.
      const inspected = (await call(tokens.operator, `/operator/tasks/${child.taskId}`)).body as { inspection: { coordinator?: { taskId: string } } };
      expect(inspected.inspection.coordinator?.taskId).toBe(coordinator.id);
    }
  });

  it("watches every task's events live, and cancels another owner's task recording the operator", async () => {
    const controller = new AbortController();
    const response = await fetch(`${gw.url}/a2a/rest/operator/tasks:watch`, { headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${tokens.operator}` }, signal: controller.signal });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    const readUntil = async (needle: string): Promise<void> => {
      while (!seen.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}: ${seen}`);
        seen += value;
      }
    };
    await readUntil('watchStarted');

    const { status, body } = await call(tokens.operator, `/operator/tasks/${tasks.bobLong?.id}:cancel`, { method: 'POST' });
    expect(status, JSON.stringify(body)).toBe(200);
    expect((body as { status: { state: string } }).status.state).toBe('TASK_STATE_CANCELED');
    // Bob's task's cancellation, seen on the operator's stream of every task.
    await readUntil('"stage":"requested"');
    expect(seen).toContain(tasks.bobLong?.id);
    controller.abort();

    const inspected = (await call(tokens.operator, `/operator/tasks/${tasks.bobLong?.id}`)).body as {
      inspection: { cancellation: { requestedBy: string; stoppedAt: string } };
      timeline: { entries: { event: { statusUpdate?: { metadata?: { cancellation?: { requestedBy?: string } } } } }[] };
    };
    expect(inspected.inspection.cancellation.requestedBy).toMatch(/^operator:\/.*ops$/);
    expect(inspected.inspection.cancellation.stoppedAt).toBeDefined();
    const stages = inspected.timeline.entries.map((e) => e.event.statusUpdate?.metadata?.cancellation?.requestedBy).filter(Boolean);
    expect(stages).toContain(inspected.inspection.cancellation.requestedBy);
    // The owner sees its task canceled.
    const owned = await fetch(`${gw.url}/a2a/rest/tasks/${tasks.bobLong?.id}`, { headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${tokens.bob}` } });
    expect(((await owned.json()) as { status: { state: string } }).status.state).toBe('TASK_STATE_CANCELED');
    await waitFor(async () => ((await list(tokens.operator, { state: 'TASK_STATE_CANCELED' })).tasks.length === 1 ? true : undefined));
  });
});

describe('refusals', () => {
  // Run when no task is running any more, so that Redis stands still.
  it('is refused without a2a:operator, and bad input is refused, each changing nothing', async () => {
    await expectUnchanged(gw, async () => {
      const refused = await call(tokens.alice, '/operator/tasks');
      expect(refused.status).toBe(403);
      expect(JSON.stringify(refused.body)).toContain('SCOPE_MISSING');
      const badQueries: Record<string, string>[] = [{ pageToken: 'not-a-token' }, { state: 'DONE' }, { pageSize: '0' }, { changedAfter: 'yesterday' }];
      for (const query of badQueries) {
        const bad = await call(tokens.operator, '/operator/tasks', { query });
        expect(bad.status, JSON.stringify(query)).toBe(400);
        expect((bad.body.error as { status: string }).status).toBe('INVALID_ARGUMENT');
      }
      expect((await call(tokens.alice, `/operator/tasks/${tasks.bob?.id}`)).status).toBe(403);
      expect((await call(tokens.alice, `/operator/tasks/${tasks.bob?.id}:cancel`, { method: 'POST' })).status).toBe(403);
    });
  });
});

describe('the recent-tasks index', () => {
  const redis = new Redis(REDIS_URL);
  const key = `${uniquePrefix('recent')}:{ops}:recent`;
  afterAll(async () => {
    await redis.del(key);
    await redis.quit();
  });

  it('coalesces notes into one write whose scores only move forward, and prunes by retention and size', async () => {
    const index = new RecentTaskIndex(redis, key, { flushIntervalMs: 10_000, maxEntries: 3, retentionMs: 60_000, pruneIntervalMs: 0 });
    const now = Date.now();
    await redis.zadd(key, now - 120_000, 'expired', now + 5_000, 'later');
    index.note('a', now - 3);
    index.note('a', now - 1);
    index.note('b', now - 2);
    index.note('c', now - 1);
    index.note('later', now); // older than what the index has: the score stays
    await index.flush();
    // "expired" went by retention; of a, b, c, later the oldest (b) went by size.
    expect(await redis.zrange(key, 0, -1, 'WITHSCORES')).toEqual(['a', String(now - 1), 'c', String(now - 1), 'later', String(now + 5_000)]);
    expect((await index.read({ count: 2 })).map((e) => e.taskId)).toEqual(['later', 'c']);
    expect((await index.read({ count: 2, cursor: { changedAtMs: now - 1, taskId: 'c' } })).map((e) => e.taskId)).toEqual(['a']);
  });
});
