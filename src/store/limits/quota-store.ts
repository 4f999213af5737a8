// The Redis side of the per-owner storage quota (src/limits/storage-quota.ts): the owner's quota
// hash and its due checks (the owner's slot), each charged task's remaining time to live (its own
// slot), and the release of the charges of tasks that are gone (the quotaRelease script).
import type { RedisClient } from '../../redis/connection.ts';
import { pipelineAcrossSlots } from '../../redis/cross-slot.ts';
import { RedisKeys } from '../keys.ts';
import { quotaReleaseScript } from '../limit-scripts.ts';
import { scriptCaller, type ScriptCaller } from '../script-call.ts';

export class QuotaStore {
  private readonly call: ScriptCaller;
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = new RedisKeys(prefix);
    this.call = scriptCaller(redis);
  }

  /** Up to `count` of the owner's charged tasks whose check is due at `nowMs`. */
  dueChecks(ownerKey: string, nowMs: number, count: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.ownerQuotaChecks(ownerKey), '-inf', nowMs, 'LIMIT', 0, count);
  }

  /**
   * Each task's remaining time to live in ms, as PTTL answers: -2 when the task is gone, -1 when
   * it is open (no TTL), NaN when the read failed. One pipelined round trip per Redis node.
   */
  async taskTtls(taskIds: readonly string[]): Promise<number[]> {
    const taskKeys = taskIds.map((taskId) => this.keys.task(taskId).task);
    const replies = await pipelineAcrossSlots(this.redis, taskKeys, (pipeline, i) => pipeline.pttl(taskKeys[i] as string));
    return replies.map(([reply]) => (reply !== undefined && reply[0] === null ? Number(reply[1]) : Number.NaN));
  }

  /** Releases the charges of the `gone` tasks and moves the others' checks to the given times; the bytes and tasks released. */
  release(ownerKey: string, gone: readonly string[], later: Readonly<Record<string, number>>): Promise<{ bytes: number; tasks: number }> {
    return this.call(quotaReleaseScript, { ownerQuota: this.keys.ownerQuota(ownerKey), ownerQuotaChecks: this.keys.ownerQuotaChecks(ownerKey) }, { gone, later });
  }

  /** What the owner has stored now: bytes and tasks as charged. */
  async usage(ownerKey: string): Promise<{ bytes: number; tasks: number }> {
    const [bytes, tasks] = await this.redis.hmget(this.keys.ownerQuota(ownerKey), 'bytes', 'tasks');
    return { bytes: Number(bytes ?? 0), tasks: Number(tasks ?? 0) };
  }
}
