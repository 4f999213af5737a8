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
import { ownerFromKey, tenantKeyOf } from '../src/store/owner.ts';
import { FairShareStore, type RunningSet } from '../src/store/shares/fair-share-store.ts';

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

/** A running set this process holds slots in, and the turns it holds them for. */
interface HeldSet {
  set: RunningSet;
  taskIds: Set<string>;
}

/** One set a turn counts in, with its cap and the name its held slots go by. */
interface CountedSet {
  name: string;
  set: RunningSet;
  cap: number;
}

export class RunningShare {
  /** Slots this process holds, by the set's name (`owner <ownerKey>`, `tenant <agent>/<tenant>`). */
  private readonly held = new Map<string, HeldSet>();
  private renewer: NodeJS.Timeout | undefined;
  private readonly store: FairShareStore;

  constructor(
    redis: RedisClient,
    prefix: string,
    private readonly caps: RunningCaps,
  ) {
    this.store = new FairShareStore(redis, prefix);
  }

  /** The sets a turn of `ownerKey` counts in, with their caps: none when authentication is off, no tenant set for the default tenant. */
  private setsOf(ownerKey: string): CountedSet[] {
    const { tenant, subject } = ownerFromKey(ownerKey);
    // Authentication off: every caller is the one anonymous owner, nobody to be fair between.
    if (subject === 'anonymous') return [];
    const sets: CountedSet[] = [];
    if (this.caps.maxRunningTurnsPerOwner > 0) sets.push({ name: `owner ${ownerKey}`, set: { scope: 'owner', ownerKey }, cap: this.caps.maxRunningTurnsPerOwner });
    if (tenant !== '' && this.caps.maxRunningTurnsPerTenant > 0) sets.push({ name: `tenant ${tenantKeyOf(ownerKey)}`, set: { scope: 'tenant', ownerKey }, cap: this.caps.maxRunningTurnsPerTenant });
    return sets;
  }

  /** A running slot for the turn of `taskId`, or why it must wait. */
  async take(ownerKey: string, taskId: string): Promise<RunningSlot | RunningShareFull> {
    const sets = this.setsOf(ownerKey);
    const taken: CountedSet[] = [];
    let fresh = false;
    for (const counted of sets) {
      let reply: { taken: boolean; running: number; fresh: boolean };
      try {
        reply = await this.store.takeRunning(counted.set, taskId, counted.cap, this.caps.slotTtlMs);
      } catch (error) {
        await this.remove(taken, taskId);
        throw error;
      }
      if (!reply.taken) {
        // What the owner's set took is given back before the turn waits (unless it was already this task's).
        await this.remove(fresh ? taken : [], taskId);
        return { full: counted.set.scope, running: reply.running, cap: counted.cap };
      }
      if (reply.fresh) fresh = true;
      taken.push(counted);
    }
    for (const counted of taken) this.hold(counted, taskId);
    let released = false;
    return {
      fresh,
      release: () => {
        if (released) return;
        released = true;
        for (const counted of taken) this.unhold(counted.name, taskId);
        // A release that does not reach Redis leaves the slot to expire (slotTtlMs).
        this.remove(taken, taskId).catch(() => undefined);
      },
    };
  }

  /** Renews every slot this process holds: one script per set. */
  async renew(): Promise<void> {
    await Promise.all([...this.held.values()].map(({ set, taskIds }) => this.store.renewRunning(set, [...taskIds], this.caps.slotTtlMs)));
  }

  /** Stops renewing (at shutdown, once the turns have ended or been handed back). */
  close(): void {
    clearInterval(this.renewer);
    this.renewer = undefined;
    this.held.clear();
  }

  private hold(counted: CountedSet, taskId: string): void {
    let held = this.held.get(counted.name);
    if (held === undefined) this.held.set(counted.name, (held = { set: counted.set, taskIds: new Set() }));
    held.taskIds.add(taskId);
    if (this.renewer === undefined) {
      // A renewal that fails (Redis out of reach) is retried at the next tick; the expiry covers two misses.
      this.renewer = setInterval(() => void this.renew().catch(() => undefined), Math.max(100, Math.floor(this.caps.slotTtlMs / 3)));
      this.renewer.unref();
    }
  }

  private unhold(name: string, taskId: string): void {
    const held = this.held.get(name);
    held?.taskIds.delete(taskId);
    if (held?.taskIds.size === 0) this.held.delete(name);
    if (this.held.size === 0) this.close();
  }

  private async remove(sets: readonly CountedSet[], taskId: string): Promise<void> {
    await Promise.all(sets.map((counted) => this.store.removeRunning(counted.set, taskId)));
  }
}

/** True when `take` answered that the turn must wait. */
export const isShareFull = (taken: RunningSlot | RunningShareFull): taken is RunningShareFull => 'full' in taken;
