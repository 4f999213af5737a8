// Push delivery state in Redis: configs and cursors per task (the task's slot), the outbox
// index and dead letters per push shard, circuit breakers per receiver. Every script touches
// one slot (docs/redis-slots.md); readers across slots (the sweeper, the dead-letter list) read
// an index in one slot, then each task in its own.
import type { RedisClient } from '../redis/connection.ts';
import { inflateAll } from '../store/creation-event.ts';
import { parseStoredArtifacts } from '../store/stored-artifacts.ts';
import { defineScripts, type ScriptRunner } from '../store/scripts.ts';
import { PushKeys, PUSH_SHARDS } from './push-keys.ts';
import type { StoredPushConfig } from './push-config.ts';
import { pipelineAcrossSlots } from '../redis/cross-slot.ts';

export type SaveResult = { kind: 'not-found' } | { kind: 'too-many'; count: number } | { kind: 'saved'; created: boolean };

/**
 * Where a new config's delivery cursor starts: every event of the task ('begin'), the events
 * after its newest one ('now'), or the events after a given event id (read earlier by newestEventId).
 */
export type CursorStart = 'begin' | 'now' | { afterEventId: string };

/** A delivery the outbox step reported: just started, or already in flight. */
export interface PendingDelivery {
  kind: 'new' | 'inflight';
  configId: string;
  eventId: string;
  /** The StreamResponse JSON as stored ('' when it is no longer in the buffer). */
  eventJson: string;
}

export type NextResult = { kind: 'gone' } | { kind: 'ok'; ownerKey: string; drained: boolean; deliveries: PendingDelivery[] };

export interface DeliveryState {
  config: StoredPushConfig | undefined;
  settledEventId: string;
  inflightEventId: string;
}

/** A delivery that will not be retried any more, kept for operators to read and replay. */
export interface DeadLetter {
  /** The delivery id (webhook-id); a replay sends it again under the same id. */
  id: string;
  taskId: string;
  configId: string;
  eventId: string;
  /** The owner key of the task (agent/tenant/subject), for listing per agent. */
  ownerKey: string;
  url: string;
  attempts: number;
  firstAttemptAt: string;
  deadAt: string;
  lastError: string;
  lastStatus?: number;
  /** The receiver answered 410 and the config was disabled. */
  configDisabled?: boolean;
  replays: number;
  /** The StreamResponse that was not delivered. */
  event: unknown;
}

const str = (value: unknown): string => (value === null || value === undefined ? '' : String(value));

export class PushStore {
  readonly keys: PushKeys;
  private readonly run: ScriptRunner;

  constructor(
    readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = new PushKeys(prefix);
    this.run = defineScripts(redis);
  }

  async saveConfig(ownerKey: string, config: StoredPushConfig, maxConfigs: number, cursorStart: CursorStart): Promise<SaveResult> {
    const k = this.keys.task(config.taskId);
    const start = typeof cursorStart === 'string' ? cursorStart : cursorStart.afterEventId;
    const reply = await this.run('pushSaveConfig', [k.task, k.configs, k.cursors, k.events], [ownerKey, config.id, JSON.stringify(config), maxConfigs, start]);
    if (reply[0] === 'NOT_FOUND') return { kind: 'not-found' };
    if (reply[0] === 'TOO_MANY') return { kind: 'too-many', count: Number(reply[1]) };
    return { kind: 'saved', created: reply[1] === '1' };
  }

  /** The id of the task's newest event ('0-0' when it has none): a cursor start that misses nothing appended after this read. */
  async newestEventId(taskId: string): Promise<string> {
    const newest = await this.redis.xrevrange(this.keys.task(taskId).events, '+', '-', 'COUNT', 1);
    return newest[0]?.[0] ?? '0-0';
  }

  /** The task's configs (one when configId is given); undefined when the task is not the owner's. */
  async readConfigs(ownerKey: string, taskId: string, configId = ''): Promise<StoredPushConfig[] | undefined> {
    const k = this.keys.task(taskId);
    const reply = await this.run('pushReadConfigs', [k.task, k.configs], [ownerKey, configId]);
    if (reply[0] === 'NOT_FOUND') return undefined;
    return reply
      .slice(1)
      .map((json) => JSON.parse(str(json)) as StoredPushConfig)
      .sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
  }

  /** False when the task is not the owner's; deleting an unknown config succeeds (idempotent). */
  async deleteConfig(ownerKey: string, taskId: string, configId: string): Promise<boolean> {
    const k = this.keys.task(taskId);
    const reply = await this.run('pushDeleteConfig', [k.task, k.configs, k.cursors], [ownerKey, configId]);
    return reply[0] !== 'NOT_FOUND';
  }

  /** The outbox step of one task (the pushNext script). */
  async next(taskId: string, start: boolean): Promise<NextResult> {
    const k = this.keys.task(taskId);
    const reply = await this.run('pushNext', [k.task, k.configs, k.cursors, k.events, k.artifactChunks], [start ? '1' : '0']);
    if (reply[0] === 'GONE') return { kind: 'gone' };
    const deliveries: PendingDelivery[] = [];
    for (let i = 3; i + 3 < reply.length; i += 4) {
      deliveries.push({ kind: str(reply[i]) as PendingDelivery['kind'], configId: str(reply[i + 1]), eventId: str(reply[i + 2]), eventJson: str(reply[i + 3]) });
    }
    const inflated = await inflateAll(this.redis, this.keys.task(taskId).history, deliveries.map((d) => d.eventJson));
    deliveries.forEach((delivery, i) => (delivery.eventJson = withMergedArtifacts(inflated[i] ?? delivery.eventJson)));
    return { kind: 'ok', drained: reply[1] === '1', ownerKey: str(reply[2]), deliveries };
  }

  async deliveryState(taskId: string, configId: string): Promise<DeliveryState> {
    const k = this.keys.task(taskId);
    const [config, settled, inflight] = (await this.run('pushDeliveryState', [k.configs, k.cursors], [configId])).map(str);
    return { config: config ? (JSON.parse(config) as StoredPushConfig) : undefined, settledEventId: settled ?? '', inflightEventId: inflight ?? '' };
  }

  /**
   * Moves a config's cursor past a settled event (and disables the config on 'gone'); returns
   * the config's next event, now in flight, when there is one (its job is the caller's to add).
   */
  async settle(
    taskId: string,
    configId: string,
    eventId: string,
    outcome: 'delivered' | 'dead' | 'gone',
    disabled?: StoredPushConfig['disabled'],
  ): Promise<PendingDelivery | undefined> {
    const k = this.keys.task(taskId);
    const reply = await this.run('pushSettle', [k.configs, k.cursors, k.events], [configId, eventId, outcome, JSON.stringify(disabled ?? null)]);
    if (reply[0] !== 'SETTLED' || reply[1] === undefined) return undefined;
    const [eventJson = ''] = await inflateAll(this.redis, this.keys.task(taskId).history, [str(reply[2])]);
    return { kind: 'new', configId, eventId: str(reply[1]), eventJson };
  }

  /** Indexes a task in its shard's outbox (a hint; the sweeper re-checks the task). */
  async index(taskId: string, nowMs: number = Date.now()): Promise<void> {
    await this.redis.zadd(this.keys.outbox(this.keys.shardOf(taskId)), 'GT', nowMs, taskId);
  }

  async unindex(taskId: string): Promise<void> {
    await this.redis.zrem(this.keys.outbox(this.keys.shardOf(taskId)), taskId);
  }

  /** How many tasks each shard's outbox holds (one pipelined round trip per Redis node). */
  async outboxSizes(): Promise<number[]> {
    const outboxes = Array.from({ length: PUSH_SHARDS }, (_, shard) => this.keys.outbox(shard));
    const replies = await pipelineAcrossSlots(this.redis, outboxes, (pipeline, shard) => pipeline.zcard(outboxes[shard] as string));
    return replies.map(([reply]) => (reply !== undefined && reply[0] === null ? Number(reply[1]) : 1));
  }

  /** One page of a shard's outbox: task ids and when each was last indexed. */
  async outboxPage(shard: number, offset: number, count: number): Promise<{ taskId: string; indexedAtMs: number }[]> {
    const flat = await this.redis.zrange(this.keys.outbox(shard), offset, offset + count - 1, 'WITHSCORES');
    const page: { taskId: string; indexedAtMs: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) page.push({ taskId: flat[i] as string, indexedAtMs: Number(flat[i + 1]) });
    return page;
  }

  async recordDeadLetter(letter: DeadLetter, maxPerShard: number): Promise<void> {
    const shard = this.keys.shardOf(letter.taskId);
    await this.run('pushDeadLetter', [this.keys.deadLetters(shard), this.keys.deadLetterIndex(shard)], [letter.id, JSON.stringify(letter), Date.parse(letter.deadAt), maxPerShard]);
  }

  async removeDeadLetter(taskId: string, id: string): Promise<void> {
    const shard = this.keys.shardOf(taskId);
    await this.run('pushRemoveDeadLetter', [this.keys.deadLetters(shard), this.keys.deadLetterIndex(shard)], [id]);
  }

  async readDeadLetter(id: string): Promise<DeadLetter | undefined> {
    const taskId = id.split('.')[0] ?? '';
    const json = await this.redis.hget(this.keys.deadLetters(this.keys.shardOf(taskId)), id);
    return json === null ? undefined : (JSON.parse(json) as DeadLetter);
  }

  /**
   * Dead letters, newest first, at most `limit` from each shard (bounded work per call); of one
   * task only its own shard is read.
   */
  async listDeadLetters(limit: number, taskId?: string): Promise<DeadLetter[]> {
    const letters: DeadLetter[] = [];
    const shards = taskId === undefined ? [...Array(PUSH_SHARDS).keys()] : [this.keys.shardOf(taskId)];
    for (const shard of shards) {
      const ids = await this.redis.zrevrange(this.keys.deadLetterIndex(shard), 0, limit - 1);
      if (ids.length === 0) continue;
      const values = await this.redis.hmget(this.keys.deadLetters(shard), ...ids);
      for (const value of values) if (value !== null) letters.push(JSON.parse(value) as DeadLetter);
    }
    return letters.sort((a, b) => b.deadAt.localeCompare(a.deadAt) || b.id.localeCompare(a.id)).slice(0, limit);
  }

  /** The breaker of one receiver (the pushBreaker script). */
  async breaker(origin: string, action: 'admit' | 'success' | 'failure', settings: { threshold: number; cooldownMs: number; probeMs: number }): Promise<{ allow: boolean; untilMs: number | undefined; failures: number }> {
    const reply = await this.run(
      'pushBreaker',
      [this.keys.breaker(origin)],
      [action, Date.now(), settings.threshold, settings.cooldownMs, settings.probeMs, Math.max(settings.cooldownMs * 4, 3_600_000)],
    );
    if (reply[0] === 'ALLOW') return { allow: true, untilMs: undefined, failures: Number(reply[1] ?? 0) };
    return { allow: reply[0] === 'CLOSED', untilMs: reply[1] === undefined || reply[1] === null ? undefined : Number(reply[1]), failures: 0 };
  }
}

/**
 * A Task snapshot the pushNext script built while artifact chunks were pending carries its artifacts
 * as {"snapshotBytes", "snapshot", "chunks"} (as the store keeps them): the receiver gets them merged.
 * Every other event passes through untouched (and unparsed).
 */
export function withMergedArtifacts(eventJson: string): string {
  if (!eventJson.startsWith('{"task":') || !eventJson.includes('"artifacts":{"snapshotBytes":')) return eventJson;
  const event = JSON.parse(eventJson) as { task: { artifacts?: unknown } };
  const artifacts = parseStoredArtifacts(JSON.stringify(event.task.artifacts)).artifacts;
  return JSON.stringify({ ...event, task: { ...event.task, artifacts } });
}
