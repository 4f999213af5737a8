// The task store: every read and write of task state in Redis goes through here, and every
// multi-key write is one Lua script (src/store/lua), so a task's state, its replay buffer and
// its live announcement never disagree. Its operations live by role (docs/task-store.md):
// gateway-operations.ts (what a request does), turn-operations.ts (what a lease holder does,
// fenced) and maintenance-operations.ts (reconciler, shutdown); this class makes their shared
// parts once, and callers use the roles: store.gateway, store.turns, store.maintenance.
import type { RedisClient } from '../redis/connection.ts';
import type { TaskChannels } from './channels.ts';
import { RedisKeys } from './keys.ts';
import { DEFAULT_REPLAY_BOUND, type ReplayBound } from './replay-bound.ts';
import { RecentTaskIndex, DEFAULT_RECENT_TASK_INDEX, type RecentTaskIndexOptions } from './recent-tasks.ts';
import { defineScripts } from './scripts.ts';
import { OwnerIndex } from './owner-index.ts';
import type { StoreParts } from './store-role.ts';
import { GatewayOperations } from './gateway-operations.ts';
import { TurnOperations } from './turn-operations.ts';
import { MaintenanceOperations } from './maintenance-operations.ts';

export { ownerKeyOf, ownerFromKey, type Owner } from './owner.ts';
export type { StepRecord, TaskLinks, TaskVersions, TurnRecord } from './task-records.ts';
export type { StoredEvent } from './stored-event.ts';
export { GATEWAY_METADATA_KEY, taskReadOf, type TaskRead } from './task-read.ts';
export type { AcceptResult, CancelResult, CreateResult, OverQuota, QuotaCharge } from './gateway-operations.ts';
export { StaleLeaseError, type CarriedEvent, type EmitPlace, type EventPlace, type FinishResult, type LeaseResult, type LostWorker } from './turn-operations.ts';
export type { AcquiredLease, LeaseTerms } from './lease-reply.ts';
export { isStaleActive, type ActiveEntry } from './maintenance-operations.ts';
export { GatewayOperations, TurnOperations, MaintenanceOperations };

export const DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600;

export class TaskStore {
  readonly keys: RedisKeys;
  /** The tasks' pub/sub channels, for the code outside the store that subscribes to them. */
  readonly channels: TaskChannels;
  /** The key prefix, for the store functions that take one (operator-reads.ts). */
  readonly prefix: string;
  /** Every task by when it last changed, for operators; noted after each write that changes a task's state. */
  readonly recentTasks: RecentTaskIndex;
  /** The owner's indexes and active set, written after each task's own write (step 3, docs/redis-slots.md). */
  readonly ownerIndex: OwnerIndex;
  /** What the gateway does for a request: create, accept, read, cancel, replay. */
  readonly gateway: GatewayOperations;
  /** What a worker holding a task's lease does; every write fenced by the lease generation. */
  readonly turns: TurnOperations;
  /** What the reconciler and shutdown do. */
  readonly maintenance: MaintenanceOperations;

  /**
   * @param retentionSeconds how long a terminal task (state, history, replay buffer, turns)
   *   stays readable before Redis expires it.
   * @param replay how far back each task's replay buffer reaches (the `replay` settings).
   * @param recentTaskIndex how the recent-tasks index is written (its retention defaults to retentionSeconds).
   */
  constructor(
    readonly redis: RedisClient,
    prefix: string,
    readonly retentionSeconds: number = DEFAULT_RETENTION_SECONDS,
    readonly replay: ReplayBound = DEFAULT_REPLAY_BOUND,
    recentTaskIndex: Partial<RecentTaskIndexOptions> = {},
  ) {
    this.keys = new RedisKeys(prefix);
    this.prefix = prefix;
    this.channels = this.keys;
    const run = defineScripts(redis, replay);
    const indexOptions = { ...DEFAULT_RECENT_TASK_INDEX, retentionMs: retentionSeconds * 1000, ...recentTaskIndex };
    this.recentTasks = RecentTaskIndex.shared(redis, this.keys.recentTasks(), indexOptions);
    this.ownerIndex = OwnerIndex.shared(redis, run, this.keys, indexOptions.flushIntervalMs);
    const parts: StoreParts = { redis, keys: this.keys, run, recentTasks: this.recentTasks, ownerIndex: this.ownerIndex, retentionSeconds, replay };
    this.gateway = new GatewayOperations(parts);
    this.turns = new TurnOperations(parts);
    this.maintenance = new MaintenanceOperations(parts);
  }
}
