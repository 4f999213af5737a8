// The Redis side of consumers (src/consumers/): admitting a request, reserving and giving back a
// new task, sweeping the tasks in progress that ended, charging model tokens, reading usage.
import type { RedisClient } from '../../redis/connection.ts';
import { pipelineAcrossSlots } from '../../redis/cross-slot.ts';
import { RedisKeys } from '../keys.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';
import { consumerKeys, DAY_USAGE_TTL_S, MONTH_USAGE_TTL_S } from './consumer-keys.ts';
import { consumerChargeScript, consumerRequestScript, consumerTaskStartScript, consumerTaskUndoScript, type TaskStart } from './consumer-scripts.ts';

export type { TaskStart };

/** One period's usage of a consumer. */
export interface UsageFigures {
  requests: number;
  tasks: number;
  tokensIn: number;
  tokensOut: number;
  spend: number;
}

const figuresOf = (hash: Record<string, string>): UsageFigures => ({
  requests: Number(hash.requests ?? 0),
  tasks: Number(hash.tasks ?? 0),
  tokensIn: Number(hash.tokensIn ?? 0),
  tokensOut: Number(hash.tokensOut ?? 0),
  // Rounded to what a price per million tokens can make distinct, without float noise.
  spend: Math.round(Number(hash.spend ?? 0) * 1e9) / 1e9,
});

const TTLS = { dayTtl: DAY_USAGE_TTL_S, monthTtl: MONTH_USAGE_TTL_S };

export class ConsumerStore {
  private readonly call: ScriptCaller;
  private readonly taskKeys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {
    this.call = scriptCaller(redis);
    this.taskKeys = new RedisKeys(prefix);
  }

  /** Takes one request token (perSecond 0: none) and counts the request; else the ms to wait. */
  admitRequest(id: string, perSecond: number, burst: number): Promise<{ taken: true } | { taken: false; waitMs: number }> {
    const keys = consumerKeys(this.prefix, id, this.now());
    return this.call(consumerRequestScript, keys, { perSecond, burst, ...TTLS });
  }

  /** Reserves a new task (see consumerTaskStart-3.lua); the keys are returned for its undo. */
  async startTask(id: string, taskId: string, concurrent: number, perDay: number): Promise<{ start: TaskStart; undo: () => Promise<void> }> {
    const nowMs = this.now();
    const keys = consumerKeys(this.prefix, id, nowMs);
    const start = await this.call(consumerTaskStartScript, keys, { taskId, nowMs, concurrent, perDay, ...TTLS });
    return { start, undo: () => this.call(consumerTaskUndoScript, keys, { taskId }) };
  }

  /** The tasks of the consumer's active set and when each was reserved (at most `count`, oldest first). */
  async activeTasks(id: string, count: number): Promise<[string, number][]> {
    const flat = await this.redis.zrange(consumerKeys(this.prefix, id, this.now()).active, 0, count - 1, 'WITHSCORES');
    const entries: [string, number][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) entries.push([flat[i] as string, Number(flat[i + 1])]);
    return entries;
  }

  /** Each task's state as stored ('' when the task is gone; undefined when the read failed). */
  async taskStates(taskIds: readonly string[]): Promise<(string | undefined)[]> {
    const hashes = taskIds.map((taskId) => this.taskKeys.task(taskId).task);
    const replies = await pipelineAcrossSlots(this.redis, hashes, (pipeline, i) => pipeline.hget(hashes[i] as string, 'state'));
    return replies.map(([reply]) => (reply !== undefined && reply[0] === null ? ((reply[1] as string | null) ?? '') : undefined));
  }

  /** Takes tasks that ended out of the active set. */
  async endTasks(id: string, taskIds: readonly string[]): Promise<void> {
    if (taskIds.length > 0) await this.redis.zrem(consumerKeys(this.prefix, id, this.now()).active, ...taskIds);
  }

  /** Adds tokens and spend to today's and this month's usage; the totals the budgets are held against. */
  charge(id: string, tokensIn: number, tokensOut: number, spend: number): Promise<{ tokensToday: number; spendThisMonth: number }> {
    const keys = consumerKeys(this.prefix, id, this.now());
    return this.call(consumerChargeScript, { day: keys.day, month: keys.month }, { tokensIn: Math.round(tokensIn), tokensOut: Math.round(tokensOut), spend, ...TTLS });
  }

  /** The consumer's usage today and this month (UTC), each with its period ("YYYY-MM-DD", "YYYY-MM"). */
  async usage(id: string): Promise<{ today: UsageFigures & { date: string }; month: UsageFigures & { month: string } }> {
    const nowMs = this.now();
    const keys = consumerKeys(this.prefix, id, nowMs);
    const [day, month] = await Promise.all([this.redis.hgetall(keys.day), this.redis.hgetall(keys.month)]);
    const at = new Date(nowMs).toISOString();
    return { today: { date: at.slice(0, 10), ...figuresOf(day) }, month: { month: at.slice(0, 7), ...figuresOf(month) } };
  }
}
