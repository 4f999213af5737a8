// Push delivery state in Redis: configs and cursors per task (the task's slot), the outbox
// index and dead letters per push shard, circuit breakers per receiver. Every script touches
// one slot (docs/redis-slots.md); readers across slots (the sweeper, the dead-letter list) read
// an index in one slot, then each task in its own.
import type { RedisClient } from '../../redis/connection.ts';
import { inflateAll } from '../creation-event.ts';
import { RedisLock } from '../locks.ts';
import { parseStoredArtifacts } from '../stored-artifacts.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';
import {
  pushBreakerScript,
  pushDeadLetterScript,
  pushDeleteConfigScript,
  pushDeliveryStateScript,
  pushNextScript,
  pushReadConfigsScript,
  pushRemoveDeadLetterScript,
  pushSaveConfigScript,
  pushSettleScript,
  type NextResult,
  type PendingDelivery,
  type BreakerAction,
  type SaveReply,
} from '../push-scripts.ts';
import { PushKeys, PUSH_SHARDS } from './push-keys.ts';
import type { StoredPushConfig } from '../../push/push-config.ts';
import { taskField } from '../task-hash.ts';
import { pipelineAcrossSlots } from '../../redis/cross-slot.ts';

export type SaveResult = SaveReply;
export type { NextResult, PendingDelivery };

/** A task's push configs by id and its delivery cursors (`d:<id>` settled, `i:<id>` in flight), for the operators' inspection. */
export async function readTaskPushState(redis: RedisClient, prefix: string, taskId: string): Promise<{ configs: Record<string, StoredPushConfig>; cursors: Record<string, string> }> {
  const keys = new PushKeys(prefix).task(taskId);
  const [configs, cursors] = await Promise.all([redis.hgetall(keys.configs), redis.hgetall(keys.cursors)]);
  return { configs: Object.fromEntries(Object.entries(configs).map(([id, json]) => [id, JSON.parse(json) as StoredPushConfig])), cursors };
}

/**
 * Where a new config's delivery cursor starts: every event of the task ('begin'), the events
 * after its newest one ('now'), or the events after a given event id (read earlier by newestEventId).
 */
export type CursorStart = 'begin' | 'now' | { afterEventId: string };

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

export class PushStore {
  private readonly keys: PushKeys;
  private readonly call: ScriptCaller;

  constructor(
    readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = new PushKeys(prefix);
    this.call = scriptCaller(redis);
  }

  async saveConfig(ownerKey: string, config: StoredPushConfig, maxConfigs: number, cursorStart: CursorStart): Promise<SaveResult> {
    const k = this.keys.task(config.taskId);
    const start = typeof cursorStart === 'string' ? cursorStart : cursorStart.afterEventId;
    return this.call(pushSaveConfigScript, k, { ownerKey, configId: config.id, config, maxConfigs, cursorStart: start });
  }

  /** The id of the task's newest event ('0-0' when it has none): a cursor start that misses nothing appended after this read. */
  async newestEventId(taskId: string): Promise<string> {
    const newest = await this.redis.xrevrange(this.keys.task(taskId).events, '+', '-', 'COUNT', 1);
    return newest[0]?.[0] ?? '0-0';
  }

  /** The owner key of the task a delivery is for ('' when the task is gone), for its log lines. */
  async taskOwnerKey(taskId: string): Promise<string> {
    return (await this.redis.hget(this.keys.task(taskId).task, taskField.owner)) ?? '';
  }

  /** The task's configs (one when configId is given); undefined when the task is not the owner's. */
  async readConfigs(ownerKey: string, taskId: string, configId = ''): Promise<StoredPushConfig[] | undefined> {
    const k = this.keys.task(taskId);
    const configs = await this.call(pushReadConfigsScript, k, { ownerKey, configId });
    if (configs === undefined) return undefined;
    return configs
      .map((json) => JSON.parse(json) as StoredPushConfig)
      .sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
  }

  /** False when the task is not the owner's; deleting an unknown config succeeds (idempotent). */
  async deleteConfig(ownerKey: string, taskId: string, configId: string): Promise<boolean> {
    const k = this.keys.task(taskId);
    return this.call(pushDeleteConfigScript, k, { ownerKey, configId });
  }

  /** The outbox step of one task (the pushNext script). */
  async next(taskId: string, start: boolean): Promise<NextResult> {
    const k = this.keys.task(taskId);
    const result = await this.call(pushNextScript, k, { startDeliveries: start });
    if (result.kind === 'gone') return result;
    const { deliveries } = result;
    const inflated = await inflateAll(this.redis, k.history, deliveries.map((d) => d.eventJson));
    deliveries.forEach((delivery, i) => (delivery.eventJson = withMergedArtifacts(inflated[i] ?? delivery.eventJson)));
    return result;
  }

  async deliveryState(taskId: string, configId: string): Promise<DeliveryState> {
    const k = this.keys.task(taskId);
    const { configJson, settledEventId, inflightEventId } = await this.call(pushDeliveryStateScript, k, { configId });
    return { config: configJson ? (JSON.parse(configJson) as StoredPushConfig) : undefined, settledEventId, inflightEventId };
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
    const next = await this.call(pushSettleScript, k, { configId, eventId, outcome, disabled: disabled ?? null });
    if (next === undefined) return undefined;
    const [eventJson = ''] = await inflateAll(this.redis, k.history, [next.eventJson]);
    return { kind: 'new', configId, eventId: next.eventId, eventJson };
  }

  /**
   * Indexes a task in its shard's outbox (a hint; the sweeper re-checks the task), then bumps
   * the outbox change counter. The order matters: a sweeper that read the counter before its
   * shard sizes and found them empty either saw this entry or will see the counter moved.
   */
  async index(taskId: string, nowMs: number = Date.now()): Promise<void> {
    await this.redis.zadd(this.keys.outbox(this.keys.shardOf(taskId)), 'GT', nowMs, taskId);
    await this.redis.incr(this.keys.outboxChanges());
  }

  /** The outbox change counter (null before the first index write): one command, for idle sweeps. */
  async outboxChanges(): Promise<string | null> {
    return this.redis.get(this.keys.outboxChanges());
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

  /** The lock of one shard's sweep, held as `token` (one worker sweeps a shard at a time). */
  sweepLock(shard: number, token: string): RedisLock {
    return new RedisLock(this.redis, this.call, this.keys.sweepLock(shard), token);
  }

  /** Pub/sub channel on which gateways announce a config attached to a task (its id is the message). */
  attachedChannel(): string {
    return this.keys.attachedChannel();
  }

  /** Tells the workers a config was attached to the task, so its outbox starts at once. */
  async announceAttached(taskId: string): Promise<void> {
    await this.redis.publish(this.keys.attachedChannel(), taskId);
  }

  /**
   * When (ms) the signing key `kid` first signed: `nowMs`, recorded once by the first process
   * to ask, for every process (a restart does not move it).
   */
  async signingKeyFirstUsedAt(kid: string, nowMs: number): Promise<number> {
    const key = this.keys.signingKeySince(kid);
    await this.redis.set(key, String(nowMs), 'NX');
    return Number((await this.redis.get(key)) ?? nowMs);
  }

  async recordDeadLetter(letter: DeadLetter, maxPerShard: number): Promise<void> {
    const shard = this.keys.shardOf(letter.taskId);
    await this.call(pushDeadLetterScript, this.deadLetterKeys(shard), { id: letter.id, letter, deadAtMs: Date.parse(letter.deadAt), maxPerShard });
  }

  async removeDeadLetter(taskId: string, id: string): Promise<void> {
    const shard = this.keys.shardOf(taskId);
    await this.call(pushRemoveDeadLetterScript, this.deadLetterKeys(shard), { id });
  }

  private deadLetterKeys(shard: number): { deadLetters: string; deadLetterIndex: string } {
    return { deadLetters: this.keys.deadLetters(shard), deadLetterIndex: this.keys.deadLetterIndex(shard) };
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
  async breaker(origin: string, action: BreakerAction, settings: { threshold: number; cooldownMs: number; probeMs: number }): Promise<{ allow: boolean; untilMs: number | undefined; failures: number }> {
    const { threshold, cooldownMs, probeMs } = settings;
    return this.call(pushBreakerScript, { breaker: this.keys.breaker(origin) }, { action, nowMs: Date.now(), threshold, cooldownMs, probeMs, keepMs: Math.max(cooldownMs * 4, 3_600_000) });
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
