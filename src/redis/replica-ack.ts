// WAIT-acknowledged writes (redisWaitReplicas): Redis replicates asynchronously, so a write a
// master acknowledged is lost if the master dies before a replica received it. Where the
// gateway's promise needs it (a task or message accepted, a turn's final state), the caller
// asks Redis to confirm that replicas hold its writes before it says so (docs/redis-cluster.md).
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './connection.ts';
import { keySlot } from './key-slot.ts';

/** How many replicas must hold a write before it counts (0 = none: no WAIT is sent), and how long Redis may take. */
export interface ReplicaAckSetting {
  replicas: number;
  timeoutMs: number;
}

/** The setting from the config (redisWaitReplicas, redisWaitTimeoutMs). */
export const replicaAckOf = (config: { redisWaitReplicas: number; redisWaitTimeoutMs: number }): ReplicaAckSetting => ({
  replicas: config.redisWaitReplicas,
  timeoutMs: config.redisWaitTimeoutMs,
});

/** Fewer replicas than required confirmed a write in time; the write itself was applied on the master. */
export class ReplicaAckError extends Error {
  constructor(
    readonly acknowledged: number,
    readonly required: number,
    readonly timeoutMs: number,
    readonly connectionLost = false,
  ) {
    super(
      connectionLost
        ? `The connection to the Redis master was lost before its replicas confirmed the write (redisWaitReplicas ${required}); it may be lost in a failover.`
        : `Only ${acknowledged} of the ${required} Redis replicas required (redisWaitReplicas) confirmed the write within ${timeoutMs} ms (redisWaitTimeoutMs); it may be lost in a failover.`,
    );
    this.name = 'ReplicaAckError';
  }
}

/** Closes seen per connection: a WAIT answered after a reconnect says nothing of writes sent before it. */
const closes = new WeakMap<Redis, { count: number }>();

function closesOf(connection: Redis): { count: number } {
  let seen = closes.get(connection);
  if (seen === undefined) {
    const counter = { count: 0 };
    connection.on('close', () => {
      counter.count += 1;
    });
    closes.set(connection, counter);
    seen = counter;
  }
  return seen;
}

/**
 * WAIT counts the writes of the connection it is sent on, up to that point, on the master that
 * connection reaches. So it goes to the connection that made the writes: the single Redis's, or
 * on a Cluster the connection of the master serving the key's slot (the one ioredis routed the
 * writes to). One WAIT in flight per connection serves every caller whose writes were answered
 * before it answers: replies come in order, so a write answered while a WAIT is unanswered was
 * sent before that WAIT and is covered by it. WAIT blocks its connection until replicas answer
 * (sub-millisecond on a healthy link, redisWaitTimeoutMs when a replica is down); coalescing
 * keeps that to one wait at a time per connection.
 */
export class ReplicaAck {
  private readonly inFlight = new WeakMap<Redis, Promise<number>>();

  constructor(
    private readonly redis: RedisClient,
    readonly setting: ReplicaAckSetting,
  ) {}

  get enabled(): boolean {
    return this.setting.replicas > 0;
  }

  /**
   * Resolves once `setting.replicas` replicas of every master that took writes to `keys` hold
   * this process's writes made so far; rejects with ReplicaAckError otherwise. Call it right
   * after the writes were answered.
   */
  async confirm(keys: readonly string[]): Promise<void> {
    if (!this.enabled) return;
    const connections = new Set(keys.map((key) => this.connectionOf(key)));
    await Promise.all([...connections].map((connection) => this.confirmOn(connection)));
  }

  private connectionOf(key: string): Redis {
    if (!isCluster(this.redis)) return this.redis;
    const master = this.redis.slots[keySlot(key)]?.[0];
    const node = master === undefined ? undefined : this.redis.nodes('master').find((each) => `${each.options.host}:${each.options.port}` === master);
    // The slot map is being rebuilt (a failover): nothing says which master holds the write.
    if (node === undefined) throw new ReplicaAckError(0, this.setting.replicas, this.setting.timeoutMs, true);
    return node;
  }

  private async confirmOn(connection: Redis): Promise<void> {
    const seen = closesOf(connection);
    const before = seen.count;
    if (connection.status !== 'ready') throw new ReplicaAckError(0, this.setting.replicas, this.setting.timeoutMs, true);
    const acknowledged = await this.waitOn(connection);
    if (seen.count !== before) throw new ReplicaAckError(acknowledged, this.setting.replicas, this.setting.timeoutMs, true);
    if (acknowledged < this.setting.replicas) throw new ReplicaAckError(acknowledged, this.setting.replicas, this.setting.timeoutMs);
  }

  private waitOn(connection: Redis): Promise<number> {
    const pending = this.inFlight.get(connection);
    if (pending !== undefined) return pending;
    const wait = connection
      .wait(this.setting.replicas, this.setting.timeoutMs)
      .then(Number)
      .finally(() => this.inFlight.delete(connection));
    this.inFlight.set(connection, wait);
    return wait;
  }
}
