// The running half of the worker pool's fair share. Queue priority (turns.ts, tenant-share.ts)
// decides whose waiting turn is taken next, but once taken a turn holds its worker slot until it
// ends: one owner's hundred long turns, or a hundred owners of one tenant, would still fill every
// slot of every worker. So a worker that takes a turn first takes a running slot for it, in two
// sorted sets shared by every worker: its owner's (limits.maxRunningTurnsPerOwner) and its
// tenant's (limits.maxRunningTurnsPerTenant). When either is full the turn is deferred, not
// failed: it goes back to the queue for a moment and the worker runs someone else's.
//
// A slot is the task's id, scored by when it expires. The worker holding it renews all its
// slots together; one it never gives back (its process was killed) expires within slotTtlMs,
// and sooner in practice: the worker that recovers the turn takes the same task's slot again,
// which counts it once, and gives it back when the turn ends.
import type { RedisClient } from '../src/redis/connection.ts';
import { ownerFromKey } from '../src/store/owner.ts';
import { tenantKeyOf } from './tenant-share.ts';

export interface RunningCaps {
  /** Turns of one owner running at once across every worker (0 = no cap). */
  maxRunningTurnsPerOwner: number;
  /** Turns of one named tenant (of one agent) running at once across every worker (0 = no cap). */
  maxRunningTurnsPerTenant: number;
  /** How long a slot stays counted without its worker renewing it (ms); renewed every third of it. */
  slotTtlMs: number;
}

/** A taken running slot; give it back once, when the turn's run ends. */
export interface RunningSlot {
  /** False when the task already held a slot (a run of a lost worker): this run did not add to the count. */
  readonly fresh: boolean;
  release(): void;
}

/** Why a turn must wait: whose share is full, how many run, and the cap. */
export interface RunningShareFull {
  full: 'owner' | 'tenant';
  running: number;
  cap: number;
}

// One set: drop expired slots; a task already in it is renewed (and counted once); else it is
// added unless `cap` run already. Redis' clock, so workers with skewed clocks agree on expiry.
// Answers {taken (1/0), running, fresh (1/0)}.
const TAKE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, redis.call('ZCARD', KEYS[1]), 0}
end
local running = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[2])
if cap > 0 and running >= cap then return {0, running, 0} end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, running + 1, 1}
`;

// One set: moves the given slots' expiry (ARGV[2..]) to now + ttl. A plain ZADD, not XX: a slot
// that expired while Redis was out of reach (or that a duplicate delivery gave back) still runs.
const RENEW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + ttl, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ttl)
return #ARGV - 1
`;

type TakeReply = [number, number, number];

export class RunningShare {
  /** Slots this process holds: set key → task ids. */
  private readonly held = new Map<string, Set<string>>();
  private renewer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly caps: RunningCaps,
  ) {}

  /** ZSET in the owner's slot: its running turns' task ids → expiry. */
  ownerSet(ownerKey: string): string {
    return `${this.prefix}:{o:${ownerKey}}:running`;
  }

  /** ZSET in the tenant's slot (one agent's tenant): its owners' running turns' task ids → expiry. */
  tenantSet(ownerKey: string): string {
    return `${this.prefix}:{t:${tenantKeyOf(ownerKey)}}:running`;
  }

  /** The sets a turn of `ownerKey` counts in, with their caps: none when authentication is off, no tenant set for the default tenant. */
  private setsOf(ownerKey: string): { key: string; cap: number; scope: RunningShareFull['full'] }[] {
    const { tenant, subject } = ownerFromKey(ownerKey);
    // Authentication off: every caller is the one anonymous owner, nobody to be fair between.
    if (subject === 'anonymous') return [];
    const sets: { key: string; cap: number; scope: RunningShareFull['full'] }[] = [];
    if (this.caps.maxRunningTurnsPerOwner > 0) sets.push({ key: this.ownerSet(ownerKey), cap: this.caps.maxRunningTurnsPerOwner, scope: 'owner' });
    if (tenant !== '' && this.caps.maxRunningTurnsPerTenant > 0) sets.push({ key: this.tenantSet(ownerKey), cap: this.caps.maxRunningTurnsPerTenant, scope: 'tenant' });
    return sets;
  }

  /** A running slot for the turn of `taskId`, or why it must wait. */
  async take(ownerKey: string, taskId: string): Promise<RunningSlot | RunningShareFull> {
    const sets = this.setsOf(ownerKey);
    const taken: string[] = [];
    let fresh = false;
    for (const set of sets) {
      let reply: TakeReply;
      try {
        reply = (await this.redis.eval(TAKE_LUA, 1, set.key, taskId, set.cap, this.caps.slotTtlMs)) as TakeReply;
      } catch (error) {
        await this.remove(taken, taskId);
        throw error;
      }
      if (Number(reply[0]) !== 1) {
        // What the owner's set took is given back before the turn waits (unless it was already this task's).
        await this.remove(fresh ? taken : [], taskId);
        return { full: set.scope, running: Number(reply[1]), cap: set.cap };
      }
      if (Number(reply[2]) === 1) fresh = true;
      taken.push(set.key);
    }
    for (const key of taken) this.hold(key, taskId);
    let released = false;
    return {
      fresh,
      release: () => {
        if (released) return;
        released = true;
        for (const key of taken) this.unhold(key, taskId);
        // A release that does not reach Redis leaves the slot to expire (slotTtlMs).
        this.remove(taken, taskId).catch(() => undefined);
      },
    };
  }

  /** Renews every slot this process holds: one script per set. */
  async renew(): Promise<void> {
    await Promise.all([...this.held].map(([key, ids]) => this.redis.eval(RENEW_LUA, 1, key, this.caps.slotTtlMs, ...ids)));
  }

  /** Stops renewing (at shutdown, once the turns have ended or been handed back). */
  close(): void {
    clearInterval(this.renewer);
    this.renewer = undefined;
    this.held.clear();
  }

  private hold(key: string, taskId: string): void {
    let ids = this.held.get(key);
    if (ids === undefined) this.held.set(key, (ids = new Set()));
    ids.add(taskId);
    if (this.renewer === undefined) {
      // A renewal that fails (Redis out of reach) is retried at the next tick; the expiry covers two misses.
      this.renewer = setInterval(() => void this.renew().catch(() => undefined), Math.max(100, Math.floor(this.caps.slotTtlMs / 3)));
      this.renewer.unref();
    }
  }

  private unhold(key: string, taskId: string): void {
    const ids = this.held.get(key);
    ids?.delete(taskId);
    if (ids?.size === 0) this.held.delete(key);
    if (this.held.size === 0) this.close();
  }

  private async remove(keys: readonly string[], taskId: string): Promise<void> {
    await Promise.all(keys.map((key) => this.redis.zrem(key, taskId)));
  }
}

/** True when `take` answered that the turn must wait. */
export const isShareFull = (taken: RunningSlot | RunningShareFull): taken is RunningShareFull => 'full' in taken;
