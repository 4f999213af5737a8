// Every Redis key of push delivery, from one place, in the slots docs/redis-slots.md assigns:
// a task's configs and cursors in the task's slot, the outbox index and dead letters in one
// of PUSH_SHARDS push-shard slots, a receiver's circuit breaker in a slot of its own.
import { createHash } from 'node:crypto';

/** Push dispatch shards (`{push:<n>}`): outbox index and dead letters are spread over them. */
export const PUSH_SHARDS = 16;

const shardOfText = (text: string): number => createHash('sha1').update(text).digest().readUInt16BE(0) % PUSH_SHARDS;

export interface PushTaskKeys {
  /** The task hash (owner, state, finishedAtMs): read, never written, by push scripts. */
  task: string;
  /** HASH configId → stored config JSON. */
  configs: string;
  /** HASH "d:<configId>" → last settled event id, "i:<configId>" → event id in flight ('' = none), "k:<configId>" → 'snapshot' while that delivery is a Task snapshot (its next event was trimmed), "p:<configId>" → the cursor of a config a 410 disabled (parked: the replay bound holds nothing for it), "trimmedThrough" → the newest event the replay bound dropped. */
  cursors: string;
  /** The task's event stream: what is delivered. */
  events: string;
  /** The task's history: the creation event's first message is read from it (src/store/creation-event.ts). */
  history: string;
  /** The task's pending artifact chunks (src/store/keys.ts): a Task snapshot merges them. */
  artifactChunks: string;
}

export class PushKeys {
  constructor(readonly prefix: string) {}

  task(taskId: string): PushTaskKeys {
    const base = `${this.prefix}:{${taskId}}`;
    return { task: `${base}:task`, configs: `${base}:push`, cursors: `${base}:pushcur`, events: `${base}:events`, history: `${base}:history`, artifactChunks: `${base}:artchunks` };
  }

  /** The push shard a task's outbox entry and dead letters live in. */
  shardOf(taskId: string): number {
    return shardOfText(taskId);
  }

  /** ZSET taskId → ms it was last indexed: tasks with push configs whose events may be unsent. */
  outbox(shard: number): string {
    return `${this.prefix}:{push:${shard}}:outbox`;
  }

  /**
   * STRING counter, bumped after every outbox index write (one key, its own slot): an idle
   * sweeper reads it instead of every shard's size, and sweeps the shards only when it moved.
   */
  outboxChanges(): string {
    return `${this.prefix}:{push}:outboxchanges`;
  }

  /** HASH dead-letter id → dead letter JSON. */
  deadLetters(shard: number): string {
    return `${this.prefix}:{push:${shard}}:dead`;
  }

  /** ZSET dead-letter id → ms it died: listing order and the cap. */
  deadLetterIndex(shard: number): string {
    return `${this.prefix}:{push:${shard}}:deadidx`;
  }

  /** STRING: token of the worker sweeping one shard's outbox right now. */
  sweepLock(shard: number): string {
    return `${this.prefix}:{push:${shard}}:sweeplock`;
  }

  /** HASH: a receiver's (origin's) circuit breaker, shared by every worker. */
  breaker(origin: string): string {
    return `${this.prefix}:{pushrcv:${createHash('sha1').update(origin).digest('hex').slice(0, 16)}}:breaker`;
  }

  /** Pub/sub channel: a gateway attached a config to a task (workers start its outbox at once). */
  attachedChannel(): string {
    return `${this.prefix}:push:attached`;
  }

  /** STRING: ms when a webhook signing key (by kid) first signed, set once: a rotation's overlap runs from it. */
  signingKeySince(kid: string): string {
    return `${this.prefix}:{pushkeys}:since:${kid}`;
  }

}
