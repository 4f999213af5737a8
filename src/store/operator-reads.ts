// What operators read of any owner's tasks (src/operator): plain reads in each task's slot, no
// owner check (the operator's tenant scope is checked by the caller), nothing written.
import type { RedisClient } from '../redis/connection.ts';
import type { StreamResponse } from '../protocol/types.ts';
import { inflateAll } from './creation-event.ts';
import { RedisKeys } from './keys.ts';
import type { StepRecord, TurnRecord } from './task-records.ts';
import { taskField, taskHashOf, type TaskHash } from './task-hash.ts';

/** Everything of one task's slot an inspection shows, as stored. */
export interface StoredTaskState {
  hash: TaskHash;
  lease: { holder: string | undefined; ttlMs: number };
  turns: TurnRecord[];
  steps: StepRecord[];
  historyLength: number;
  inboxLength: number;
  events: { count: number; firstId: string | undefined; lastId: string | undefined };
  /** The task hash's TTL (s): negative while the task has no expiry. */
  ttlSeconds: number;
}

/** One task's stored state, or undefined when it does not exist. */
export async function readTaskState(redis: RedisClient, prefix: string, taskId: string): Promise<StoredTaskState | undefined> {
  const k = new RedisKeys(prefix).task(taskId);
  const [all, holder, leaseTtl, turns, steps, historyLength, inboxLength, eventCount, first, last, ttl] = await Promise.all([
    redis.hgetall(k.task),
    redis.get(k.lease),
    redis.pttl(k.lease),
    redis.hgetall(k.turns),
    redis.hgetall(k.steps),
    redis.llen(k.history),
    redis.llen(k.inbox),
    redis.xlen(k.events),
    redis.xrange(k.events, '-', '+', 'COUNT', 1),
    redis.xrevrange(k.events, '+', '-', 'COUNT', 1),
    redis.ttl(k.task),
  ]);
  const hash = taskHashOf(all);
  if (hash.id === undefined) return undefined;
  return {
    hash,
    lease: { holder: holder ?? undefined, ttlMs: leaseTtl },
    turns: Object.values(turns)
      .map((json) => JSON.parse(json) as TurnRecord)
      .sort((a, b) => a.turn - b.turn),
    steps: Object.values(steps)
      .map((json) => JSON.parse(json) as StepRecord)
      .sort((a, b) => a.startedAtMs - b.startedAtMs),
    historyLength,
    inboxLength,
    events: { count: eventCount, firstId: first[0]?.[0], lastId: last[0]?.[0] },
    ttlSeconds: ttl,
  };
}

/** The newest `limit` events of a task's replay buffer, oldest first, and whether older ones exist. */
export async function readNewestEvents(
  redis: RedisClient,
  prefix: string,
  taskId: string,
  limit: number,
): Promise<{ events: { id: string; event: StreamResponse }[]; truncated: boolean }> {
  const k = new RedisKeys(prefix).task(taskId);
  const reply = await redis.xrevrange(k.events, '+', '-', 'COUNT', limit + 1);
  const newest = reply.slice(0, limit).reverse();
  const jsons = await inflateAll(redis, k.history, newest.map(([, fields]) => fields[1] ?? 'null'));
  return { events: newest.map(([id], i) => ({ id, event: JSON.parse(jsons[i] ?? 'null') as StreamResponse })), truncated: reply.length > limit };
}

/** Each task's state, undefined for a task that is gone. */
export async function readTaskStates(redis: RedisClient, prefix: string, taskIds: readonly string[]): Promise<(string | undefined)[]> {
  const keys = new RedisKeys(prefix);
  const states = await Promise.all(taskIds.map((taskId) => redis.hget(keys.task(taskId).task, taskField.state)));
  return states.map((state) => state ?? undefined);
}

/** How many assignments each coordinator made (0 for a task that made none). */
export async function countAssignments(redis: RedisClient, prefix: string, taskIds: readonly string[]): Promise<number[]> {
  const keys = new RedisKeys(prefix);
  return Promise.all(taskIds.map((taskId) => redis.hlen(keys.task(taskId).assignments)));
}

/** A row of the operators' task list, as the task hash has it. */
export interface ListedTask {
  ownerKey: string;
  state: string;
  contextId: string | undefined;
  createdAtMs: string | undefined;
  parentTaskId: string | undefined;
  role: string | undefined;
}

/** Each task's row, undefined for a task that is gone (expired past its retention). */
export async function readListedTasks(redis: RedisClient, prefix: string, taskIds: readonly string[]): Promise<(ListedTask | undefined)[]> {
  const keys = new RedisKeys(prefix);
  const fields = [taskField.owner, taskField.state, taskField.contextId, taskField.createdAtMs, taskField.parentTaskId, taskField.role];
  const hashes = await Promise.all(taskIds.map((taskId) => redis.hmget(keys.task(taskId).task, ...fields)));
  return hashes.map(([ownerKey, state, contextId, createdAtMs, parentTaskId, role]) =>
    ownerKey === null || ownerKey === undefined || state === null || state === undefined
      ? undefined
      : { ownerKey, state, contextId: contextId ?? undefined, createdAtMs: createdAtMs ?? undefined, parentTaskId: parentTaskId ?? undefined, role: role ?? undefined },
  );
}
