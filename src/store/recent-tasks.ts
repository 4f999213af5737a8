// The recent-tasks index: every task's id scored by when it last changed, across all owners,
// for operators (the console's task list). It lives in a slot of its own (`{ops}`, see
// docs/redis-slots.md) and is written as its own step after the task's write: a hint, like the
// owner indexes, that every reader re-checks against the task itself. Writes are coalesced per
// process (one ZADD GT for every task noted in a flush interval) so the hot path pays a
// fraction of a command per task, and the index is pruned by retention and by size. The
// gateway and the workers of one process share one buffer per index (RecentTaskIndex.shared).
import type { RedisClient } from '../redis/connection.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { OwnerIndex } from './owner-index.ts';

export interface RecentTaskIndexOptions {
  /** How long a noted change may wait before it is written; changes in one interval share one ZADD. */
  flushIntervalMs: number;
  /** Most entries kept: past it the least recently changed go first. */
  maxEntries: number;
  /** Entries not touched for this long go (a finished task's retention: it is gone by then). */
  retentionMs: number;
  /** How often a process prunes, at most (default a minute); pruning costs O(log n + removed). */
  pruneIntervalMs?: number;
}

export const DEFAULT_RECENT_TASK_INDEX: RecentTaskIndexOptions = {
  flushIntervalMs: 1_000,
  maxEntries: 100_000,
  retentionMs: 7 * 24 * 3600 * 1000,
};

/** The index's settings from the config (console.recentTasksMax, console.recentTasksFlushMs, retentionSeconds). */
export function recentTaskIndexOf(config: GatewayConfig): RecentTaskIndexOptions {
  return { flushIntervalMs: config.console.recentTasksFlushMs, maxEntries: config.console.recentTasksMax, retentionMs: config.retentionSeconds * 1000 };
}

/** One entry of the index as read: the task and when it last changed (ms). */
export interface RecentEntry {
  taskId: string;
  changedAtMs: number;
}

/** Where a read of the index goes on: after this entry (newest first). */
export interface RecentCursor {
  changedAtMs: number;
  taskId: string;
}

const DEFAULT_PRUNE_INTERVAL_MS = 60_000;

export class RecentTaskIndex {
  /** Every index of this process, so all of them can be written out at once (flushAll). */
  private static readonly instances = new Set<WeakRef<RecentTaskIndex>>();
  /** The shared index of each key in this process (see shared()). */
  private static readonly byKey = new Map<string, WeakRef<RecentTaskIndex>>();
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  /** A process prunes a minute after it starts, then once a minute: never on its first writes. */
  private lastPrunedAtMs = Date.now();
  /** Connections the index may write with: the first one ready is used (a role may have closed its own). */
  private readonly connections = new Set<RedisClient>();

  constructor(
    redis: RedisClient,
    /** The sorted set (RedisKeys.recentTasks()). */
    readonly key: string,
    private readonly options: RecentTaskIndexOptions = DEFAULT_RECENT_TASK_INDEX,
  ) {
    this.connections.add(redis);
    RecentTaskIndex.instances.add(new WeakRef(this));
  }

  /**
   * The one index of `key` in this process, so the gateway and the workers of one process
   * write their changes together (one command per interval, not one per role). `options` of
   * the first caller apply.
   */
  static shared(redis: RedisClient, key: string, options: RecentTaskIndexOptions): RecentTaskIndex {
    let index = RecentTaskIndex.byKey.get(key)?.deref();
    if (index === undefined) {
      index = new RecentTaskIndex(redis, key, options);
      RecentTaskIndex.byKey.set(key, new WeakRef(index));
    } else {
      index.connections.add(redis);
    }
    return index;
  }

  /** The connection to write with: one that is ready, else the first (its error re-notes the batch). */
  private get redis(): RedisClient {
    let fallback: RedisClient | undefined;
    for (const connection of this.connections) {
      if (connection.status === 'ready') return connection;
      if (connection.status !== 'end') fallback ??= connection;
    }
    return fallback ?? ([...this.connections][0] as RedisClient);
  }

  /**
   * Writes what every index of this process has noted and waits for writes under way: for a
   * caller that must see Redis settled (a test comparing snapshots before and after a request).
   */
  static async flushAll(): Promise<void> {
    const flushes: Promise<void>[] = [];
    for (const ref of RecentTaskIndex.instances) {
      const index = ref.deref();
      if (index === undefined) RecentTaskIndex.instances.delete(ref);
      else flushes.push(index.flush());
    }
    await Promise.all([...flushes, OwnerIndex.flushAll()]);
  }

  /** Notes that a task changed at `atMs`; written within flushIntervalMs. Never throws. */
  note(taskId: string, atMs: number): void {
    const known = this.pending.get(taskId);
    if (known === undefined || known < atMs) this.pending.set(taskId, atMs);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => void this.flush(), this.options.flushIntervalMs);
      this.timer.unref();
    }
  }

  /**
   * Writes what was noted (one ZADD GT: scores only move forward). While no connection is ready
   * (Redis away) nothing is sent and the notes wait for the next flush, so neither a flush nor a
   * shutdown waits for Redis; a failed write is retried likewise.
   */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return this.flushing;
    const connection = [...this.connections].find((candidate) => candidate.status === 'ready');
    if (connection === undefined) {
      this.timer = setTimeout(() => void this.flush(), this.options.flushIntervalMs);
      this.timer.unref();
      return this.flushing;
    }
    const batch = this.pending;
    this.pending = new Map();
    const args: (string | number)[] = [];
    for (const [taskId, atMs] of batch) args.push(atMs, taskId);
    const nowMs = Date.now();
    const prune = nowMs - this.lastPrunedAtMs >= (this.options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS);
    if (prune) this.lastPrunedAtMs = nowMs;
    this.flushing = this.flushing.then(async () => {
      try {
        if (!prune) {
          await connection.zadd(this.key, 'GT', ...args);
          return;
        }
        await connection
          .multi()
          .zadd(this.key, 'GT', ...args)
          .zremrangebyscore(this.key, '-inf', `(${nowMs - this.options.retentionMs}`)
          // Keeps the newest maxEntries: ranks 0 .. -(maxEntries + 1) are the oldest beyond them.
          .zremrangebyrank(this.key, 0, -(this.options.maxEntries + 1))
          .exec();
      } catch {
        // Redis is away: keep the notes for the next flush rather than lose them (newest wins).
        for (const [taskId, atMs] of batch) this.note(taskId, atMs);
      }
    });
    return this.flushing;
  }

  /** flush(), waiting at most `timeoutMs` for it (at shutdown: hints are not worth a hang). */
  async flushWithin(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  /**
   * Up to `count` entries newest first, changed in (afterMs, beforeMs], strictly after `cursor`
   * when given. Equal scores come in descending id order (ZREVRANGEBYSCORE), which the cursor follows.
   */
  async read(input: { count: number; cursor?: RecentCursor; afterMs?: number; beforeMs?: number }): Promise<RecentEntry[]> {
    const max = input.cursor === undefined ? (input.beforeMs === undefined ? '+inf' : String(input.beforeMs)) : String(Math.min(input.cursor.changedAtMs, input.beforeMs ?? Infinity));
    const min = input.afterMs === undefined ? '-inf' : `(${input.afterMs}`;
    const entries: RecentEntry[] = [];
    // Entries tied with the cursor's score and not after it are skipped; read on past them.
    let offset = 0;
    for (;;) {
      const reply = await this.redis.zrevrangebyscore(this.key, max, min, 'WITHSCORES', 'LIMIT', offset, input.count);
      for (let i = 0; i + 1 < reply.length; i += 2) {
        const entry = { taskId: reply[i] as string, changedAtMs: Number(reply[i + 1]) };
        const { cursor } = input;
        if (cursor !== undefined && entry.changedAtMs === cursor.changedAtMs && entry.taskId >= cursor.taskId) continue;
        entries.push(entry);
      }
      if (entries.length > 0 || reply.length < input.count * 2) return entries.slice(0, input.count);
      offset += input.count;
    }
  }

  /** Drops entries whose task is gone (a reader found them so). */
  async drop(taskIds: readonly string[]): Promise<void> {
    if (taskIds.length > 0) await this.redis.zrem(this.key, ...taskIds);
  }
}
