// Per-owner storage quotas (issue 14, item 5): bytes of stored messages and stored tasks are
// charged when a message is accepted; past a quota a message is refused with 429 (reason,
// limit, retry hint) and nothing is stored; a re-sent message is not charged twice; charges
// are released when their tasks expire (a bounded sweep over due checks in the owner's slot).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageQuota, STORED_COPIES } from '../src/limits/storage-quota.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../src/store/task-store.ts';
import { deletePrefix, expectUnchanged, storedTaskInput, REDIS_URL, rpc, startTestGateway, textMessage, uniquePrefix, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

type ErrorBody = { error: { code: number; message: string; data: { metadata?: Record<string, string> }[] } };
const reasonOf = (body: Record<string, unknown>): string | undefined => (body as ErrorBody).error?.data.find((d) => d.metadata?.reason)?.metadata?.reason;

describe('storage quotas through the bindings', () => {
  let gw: TestGateway;
  let issuer: TestIssuer;
  const tokens: Record<string, string> = {};
  const as = (who: string): Record<string, string> => ({ Authorization: `Bearer ${tokens[who]}` });
  const send = (who: string, params: Record<string, unknown>) => rpc(gw.jsonRpcUrl, 'SendMessage', { configuration: { returnImmediately: true }, ...params }, as(who));

  beforeAll(async () => {
    issuer = await createTestIssuer();
    for (const who of ['alice', 'bob']) tokens[who] = await issuer.token({ sub: who });
    gw = await startTestGateway({
      name: 'storage-quota',
      inProcessWorker: false,
      config: {
        auth: { enabled: true, issuers: [issuer.config] },
        limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, maxStoredTasks: 3, maxStoredBytes: 40_000 },
      },
    });
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('past limits.maxStoredTasks a new task is refused with 429 STORAGE_QUOTA_TASKS and a retry hint, and nothing is stored', async () => {
    for (let i = 0; i < 3; i++) expect((await send('alice', { message: textMessage(`echo ${i}`) })).status).toBe(200);
    // The same message again is the same task: not charged again, not refused.
    const again = textMessage('echo once');
    const fourthOwner = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: again, configuration: { returnImmediately: true } }, as('bob'));
    expect(fourthOwner.status).toBe(200);
    expect((await rpc(gw.jsonRpcUrl, 'SendMessage', { message: again, configuration: { returnImmediately: true } }, as('bob'))).status).toBe(200);

    const refused = await expectUnchanged(gw, async () => {
      const response = await fetch(gw.jsonRpcUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...as('alice') },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: textMessage('echo one too many') } }),
      });
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Record<string, unknown> };
    });
    expect(refused.status).toBe(429);
    expect((refused.body as ErrorBody).error.code).toBe(-31429);
    expect(reasonOf(refused.body)).toBe('STORAGE_QUOTA_TASKS');
    expect((refused.body as ErrorBody).error.message).toContain('limits.maxStoredTasks');
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    // HTTP+JSON says the same.
    const rest = await fetch(`${gw.restUrl}/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...as('alice') },
      body: JSON.stringify({ message: textMessage('echo via rest') }),
    });
    expect(rest.status).toBe(429);
    expect(await rest.text()).toContain('STORAGE_QUOTA_TASKS');
  });

  it('past limits.maxStoredBytes a message (new or follow-up) is refused with 429 STORAGE_QUOTA_BYTES and nothing is stored', async () => {
    // Bob has one small task; a 10 kB one takes 10 kB: its history holds it, its creation event
    // refers to the history (src/store/creation-event.ts).
    const first = await send('bob', { message: textMessage(`echo ${'b'.repeat(10_000)}`) });
    expect(first.status).toBe(200);
    const taskId = (first.body.result as { task: { id: string } }).task.id;
    // The task's own charge (what goes back when it expires), beside the owner's total.
    const [quotaKey] = await gw.redis.keys(`${gw.prefix}:{o:*bob}:quota`);
    const charged = async (): Promise<{ task: number; bytes: number; tasks: number }> => {
      const [task, bytes, tasks] = await gw.redis.hmget(quotaKey as string, `t:${taskId}`, 'bytes', 'tasks');
      return { task: Number(task), bytes: Number(bytes), tasks: Number(tasks) };
    };
    const before = await charged();
    // A follow-up is stored once too: 20 kB more still fits (about 30 kB of 40 kB).
    expect((await send('bob', { message: textMessage(`echo ${'c'.repeat(20_000)}`, { taskId }) })).status).toBe(200);
    // Charged to the task as well as to the owner, so it goes back with the task; not a task more.
    const after = await charged();
    expect(after.bytes - before.bytes).toBeGreaterThan(20_000);
    expect(after.task - before.task).toBe(after.bytes - before.bytes);
    expect(after.tasks).toBe(before.tasks);
    // A small follow-up, then the same again (same messageId): the second is charged by the claim,
    // found a duplicate by the accept (one call on a single Redis), and its charge goes back.
    const small = textMessage('echo a small one', { taskId });
    expect((await send('bob', { message: small })).status).toBe(200);
    const withSmall = await charged();
    expect(withSmall.bytes).toBeGreaterThan(after.bytes);
    expect((await send('bob', { message: small })).status).toBe(200);
    expect(await charged()).toEqual(withSmall);
    const followUp = await expectUnchanged(gw, () => send('bob', { message: textMessage(`echo ${'d'.repeat(15_000)}`, { taskId }) }));
    expect(followUp.status).toBe(429);
    expect(reasonOf(followUp.body)).toBe('STORAGE_QUOTA_BYTES');
    const fresh = await expectUnchanged(gw, () => send('bob', { message: textMessage(`echo ${'e'.repeat(12_000)}`) }));
    expect(fresh.status).toBe(429);
    expect(reasonOf(fresh.body)).toBe('STORAGE_QUOTA_BYTES');
    // A small one still fits.
    expect((await send('bob', { message: textMessage('echo small') })).status).toBe(200);
  });
});

describe('StorageQuota accounting', () => {
  let redis: Redis;
  let prefix: string;
  let store: TaskStore;
  let quota: StorageQuota;
  const owner: Owner = { agent: 'default', tenant: '', subject: 'quota-owner' };
  const ownerKey = ownerKeyOf(owner);

  beforeAll(() => {
    redis = new Redis(REDIS_URL);
    prefix = uniquePrefix('quota');
    store = new TaskStore(redis, prefix, 1);
    quota = new StorageQuota(redis, store.keys.prefix, { maxStoredBytes: 1_000_000, maxStoredTasks: 10 });
  });

  afterAll(async () => {
    await deletePrefix(redis, prefix);
    await redis.quit();
  });

  const create = async (taskId: string, text: string) => {
    const input = storedTaskInput({ taskId, contextId: 'ctx', owner, text });
    const { message } = input;
    const created = await store.gateway.createTask({ ...input, quota: quota.chargeFor(message, STORED_COPIES.newTask, Date.now()) });
    expect(created.kind).toBe('created');
    // Kept in the history and, being small, in the creation event too (src/store/creation-event.ts).
    return Buffer.byteLength(JSON.stringify(message)) * 2;
  };

  it('charges at accept, keeps an open task’s charge, and releases an expired task’s charge at the sweep', async () => {
    const doneBytes = await create('q-done', 'x'.repeat(1_000));
    const openBytes = await create('q-open', 'y'.repeat(2_000));
    expect(await quota.usage(ownerKey)).toEqual({ bytes: doneBytes + openBytes, tasks: 2 });
    // Not due yet: a sweep now changes nothing.
    expect(await quota.sweep(ownerKey)).toEqual({ bytes: 0, tasks: 0 });

    expect((await store.gateway.cancelTask('q-done', owner, new Date())).kind).toBe('canceled');
    await waitFor(async () => ((await redis.exists(store.keys.task('q-done').task)) === 0 ? true : undefined), 10_000, 'expiry');
    // Both checks due (a minute after their charge): the expired task is released, the open one kept and looked at later.
    const later = Date.now() + 61_000;
    expect(await quota.sweep(ownerKey, later)).toEqual({ bytes: doneBytes, tasks: 1 });
    expect(await quota.usage(ownerKey)).toEqual({ bytes: openBytes, tasks: 1 });
    const nextCheck = Number(await redis.zscore(store.keys.ownerQuotaChecks(ownerKey), 'q-open'));
    expect(nextCheck).toBeGreaterThan(later);
    expect(await redis.zscore(store.keys.ownerQuotaChecks(ownerKey), 'q-done')).toBeNull();
    // A second sweep at the same time has nothing due.
    expect(await quota.sweep(ownerKey, later)).toEqual({ bytes: 0, tasks: 0 });
  });

  it('a refusal names the limit and when a charge may next be released', () => {
    const error = quota.refusal({ kind: 'over-quota', quota: 'bytes', stored: 999, nextCheckAtMs: 1_000_000 + 30_000 }, 1_000_000);
    expect(error.limit).toBe('limits.maxStoredBytes');
    expect(error.retryAfterSeconds).toBe(30);
    expect(error.metadata.reason).toBe('STORAGE_QUOTA_BYTES');
    const noHint = quota.refusal({ kind: 'over-quota', quota: 'tasks', stored: 10, nextCheckAtMs: undefined });
    expect(noHint.limit).toBe('limits.maxStoredTasks');
    expect(noHint.retryAfterSeconds).toBeUndefined();
  });
});
