// Running-turn caps (issue 24, item 8): an owner runs at most limits.maxRunningTurnsPerOwner
// turns at once and a named tenant at most limits.maxRunningTurnsPerTenant, across every worker.
// A turn past its share is deferred (it runs later, it does not fail) while another owner's
// turn runs; a killed worker's slot comes back, when its turn is recovered or when it expires.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isShareFull, RunningShare, type RunningSlot } from '../queues/running-share.ts';
import { ShareKeys } from '../src/store/shares/share-keys.ts';
import { deletePrefix, REDIS_URL, rpc, startTestGateway, textMessage, uniquePrefix, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('running slots in Redis', () => {
  let redis: Redis;
  const prefix = uniquePrefix('running-share-unit');
  const alice = 'default/acme/user%3At%3Aalice';
  const bob = 'default/acme/user%3At%3Abob';
  const carol = 'default/other/user%3At%3Acarol';

  beforeAll(() => {
    redis = new Redis(REDIS_URL);
  });

  afterAll(async () => {
    await deletePrefix(redis, prefix);
    await redis.quit();
  });

  const slot = (taken: Awaited<ReturnType<RunningShare['take']>>): RunningSlot => {
    if (isShareFull(taken)) throw new Error(`expected a slot, the ${taken.full}'s share is full`);
    return taken;
  };

  it("defers an owner's turn past its cap while another owner's is taken; a tenant's owners together stop at the tenant's cap", async () => {
    const share = new RunningShare(redis, prefix, { maxRunningTurnsPerOwner: 1, maxRunningTurnsPerTenant: 2, slotTtlMs: 30_000 });
    try {
      const first = slot(await share.take(alice, 't-a1'));
      expect(await share.take(alice, 't-a2')).toEqual({ full: 'owner', running: 1, cap: 1 });
      const bobs = slot(await share.take(bob, 't-b1'));
      // acme runs two (alice's and bob's): a third owner of acme waits, another tenant does not.
      expect(await share.take('default/acme/user%3At%3Adave', 't-d1')).toEqual({ full: 'tenant', running: 2, cap: 2 });
      expect(await redis.zcard(new ShareKeys(prefix).ownerRunning('default/acme/user%3At%3Adave'))).toBe(0);
      slot(await share.take(carol, 't-c1')).release();
      first.release();
      await waitFor(async () => ((await redis.zcard(new ShareKeys(prefix).ownerRunning(alice))) === 0 ? true : undefined), 5_000, "alice's slot to be given back");
      slot(await share.take(alice, 't-a2')).release();
      bobs.release();
    } finally {
      share.close();
    }
  });

  it('does not cap the anonymous owner (authentication off), nor the default tenant as one', async () => {
    const share = new RunningShare(redis, prefix, { maxRunningTurnsPerOwner: 1, maxRunningTurnsPerTenant: 1, slotTtlMs: 30_000 });
    try {
      const taken = await Promise.all(['t1', 't2', 't3'].map((id) => share.take('default//anonymous', id)));
      expect(taken.every((one) => !isShareFull(one))).toBe(true);
      const defaultTenant = await Promise.all([share.take('default//user%3At%3Ax', 'x1'), share.take('default//user%3At%3Ay', 'y1')]);
      expect(defaultTenant.every((one) => !isShareFull(one))).toBe(true);
      for (const one of [...taken, ...defaultTenant]) slot(one).release();
    } finally {
      share.close();
    }
  });

  it("gives a killed worker's slot back: the worker recovering its turn takes the same slot (counted once), and an abandoned one expires", async () => {
    const killed = new RunningShare(redis, prefix, { maxRunningTurnsPerOwner: 1, maxRunningTurnsPerTenant: 0, slotTtlMs: 600 });
    slot(await killed.take(carol, 't-lost'));
    // The process dies: it neither renews nor releases.
    killed.close();
    const survivor = new RunningShare(redis, prefix, { maxRunningTurnsPerOwner: 1, maxRunningTurnsPerTenant: 0, slotTtlMs: 600 });
    try {
      expect(isShareFull(await survivor.take(carol, 't-next'))).toBe(true);
      const recovered = slot(await survivor.take(carol, 't-lost'));
      expect(recovered.fresh).toBe(false);
      expect(await redis.zcard(new ShareKeys(prefix).ownerRunning(carol))).toBe(1);
      recovered.release();
      await waitFor(async () => ((await redis.zcard(new ShareKeys(prefix).ownerRunning(carol))) === 0 ? true : undefined), 5_000, 'the recovered slot to be given back');
      // Killed again, and this time nobody recovers the turn: the slot expires.
      const lost = new RunningShare(redis, prefix, { maxRunningTurnsPerOwner: 1, maxRunningTurnsPerTenant: 0, slotTtlMs: 600 });
      slot(await lost.take(carol, 't-gone'));
      lost.close();
      expect(isShareFull(await survivor.take(carol, 't-next'))).toBe(true);
      await sleep(700);
      const next = slot(await survivor.take(carol, 't-next'));
      expect(next.fresh).toBe(true);
      // Held slots are renewed: still counted long after one expiry.
      await sleep(1_000);
      expect(isShareFull(await survivor.take(carol, 't-other'))).toBe(true);
      next.release();
    } finally {
      survivor.close();
    }
  });
});

describe('running-turn caps on the workers', () => {
  let gw: TestGateway;
  let issuer: TestIssuer;

  beforeAll(async () => {
    issuer = await createTestIssuer();
    // Four turns at a time, but one per owner.
    gw = await startTestGateway({
      name: 'running-share',
      config: {
        workerConcurrency: 4,
        auth: { enabled: true, issuers: [issuer.config] },
        limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, maxRunningTurnsPerOwner: 1, maxRunningTurnsPerTenant: 0 },
      },
      adapterOptions: { stepMs: 20 },
    });
  });

  afterAll(async () => {
    await gw?.close();
  });

  async function send(subject: string, text: string): Promise<string> {
    const token = await issuer.token({ sub: subject });
    const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } }, { Authorization: `Bearer ${token}` });
    const task = (reply.body.result as { task?: { id: string } } | undefined)?.task;
    if (task === undefined) throw new Error(`SendMessage failed: ${JSON.stringify(reply.body)}`);
    return task.id;
  }

  async function turnOf(taskId: string): Promise<{ startedAtMs?: number; finishedAtMs?: number; outcome?: string } | undefined> {
    const record = await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1');
    return record === null ? undefined : (JSON.parse(record) as { startedAtMs?: number; finishedAtMs?: number; outcome?: string });
  }

  it("runs one owner's turns one at a time, deferred rather than failed, while another owner's turn runs at once", async () => {
    const flood = [await send('flooder', 'long 15'), await send('flooder', 'long 15'), await send('flooder', 'long 15')];
    const victim = await send('victim', 'long 3');
    const finished = await waitFor(
      async () => {
        const turns = await Promise.all([...flood, victim].map(turnOf));
        return turns.every((turn) => turn?.finishedAtMs !== undefined) ? turns : undefined;
      },
      60_000,
      'every turn to finish',
    );
    const floodTurns = finished.slice(0, 3).map((turn) => ({ start: turn?.startedAtMs as number, end: turn?.finishedAtMs as number, outcome: turn?.outcome }));
    expect(floodTurns.every((turn) => turn.outcome === 'TASK_STATE_COMPLETED')).toBe(true);
    // Never two of the flooder's turns at once, though four workers' slots were free.
    const byStart = [...floodTurns].sort((a, b) => a.start - b.start);
    for (let i = 1; i < byStart.length; i++) expect(byStart[i]?.start).toBeGreaterThanOrEqual(byStart[i - 1]?.end as number);
    // The victim's turn did not wait for the flooder's backlog.
    expect(finished[3]?.startedAtMs).toBeLessThan(byStart[1]?.start as number);
    // A deferral is no attempt: a turn whose lease its create took (started where it was accepted)
    // and that found its owner's share full gave the lease back, its attempt undone.
    const attempts = await Promise.all(flood.map((id) => gw.redis.hget(`${gw.prefix}:{${id}}:task`, 'turnAttempts')));
    expect(attempts).toEqual(['1', '1', '1']);
  });
});
