// The task store: every read and write of task state in Redis goes through here, and every
// multi-key write is one Lua script (src/store/lua), so a task's state, its replay buffer and
// its live announcement never disagree. Its operations live by role (docs/task-store.md):
// gateway-operations.ts (what a request does), turn-operations.ts (what a lease holder does,
// fenced) and maintenance-operations.ts (reconciler, shutdown); this facade makes their shared
// parts once and offers every operation under the one name callers use.
import type { RedisClient } from '../redis/connection.ts';
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
export { StaleLeaseError, type EmitPlace, type FinishResult, type LeaseResult, type LostWorker } from './turn-operations.ts';
export { isStaleActive, type ActiveEntry } from './maintenance-operations.ts';
export { GatewayOperations, TurnOperations, MaintenanceOperations };

export const DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600;

type Gateway = GatewayOperations;
type Turns = TurnOperations;
type Maintenance = MaintenanceOperations;

export class TaskStore {
  readonly keys: RedisKeys;
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
    const run = defineScripts(redis, replay);
    const indexOptions = { ...DEFAULT_RECENT_TASK_INDEX, retentionMs: retentionSeconds * 1000, ...recentTaskIndex };
    this.recentTasks = RecentTaskIndex.shared(redis, this.keys.recentTasks(), indexOptions);
    this.ownerIndex = OwnerIndex.shared(redis, run, this.keys, indexOptions.flushIntervalMs);
    const parts: StoreParts = { redis, keys: this.keys, run, recentTasks: this.recentTasks, ownerIndex: this.ownerIndex, retentionSeconds, replay };
    this.gateway = new GatewayOperations(parts);
    this.turns = new TurnOperations(parts);
    this.maintenance = new MaintenanceOperations(parts);
  }

  // ---- gateway operations ----
  createTask(...a: Parameters<Gateway['createTask']>): ReturnType<Gateway['createTask']> { return this.gateway.createTask(...a); }
  acceptMessage(...a: Parameters<Gateway['acceptMessage']>): ReturnType<Gateway['acceptMessage']> { return this.gateway.acceptMessage(...a); }
  readTask(...a: Parameters<Gateway['readTask']>): ReturnType<Gateway['readTask']> { return this.gateway.readTask(...a); }
  readLargeTask(...a: Parameters<Gateway['readLargeTask']>): ReturnType<Gateway['readLargeTask']> { return this.gateway.readLargeTask(...a); }
  readTaskWithin(...a: Parameters<Gateway['readTaskWithin']>): ReturnType<Gateway['readTaskWithin']> { return this.gateway.readTaskWithin(...a); }
  cancelTask(...a: Parameters<Gateway['cancelTask']>): ReturnType<Gateway['cancelTask']> { return this.gateway.cancelTask(...a); }
  readEventsAfter(...a: Parameters<Gateway['readEventsAfter']>): ReturnType<Gateway['readEventsAfter']> { return this.gateway.readEventsAfter(...a); }
  readEvents(...a: Parameters<Gateway['readEvents']>): ReturnType<Gateway['readEvents']> { return this.gateway.readEvents(...a); }
  messageDigest(...a: Parameters<Gateway['messageDigest']>): ReturnType<Gateway['messageDigest']> { return this.gateway.messageDigest(...a); }
  parentOf(...a: Parameters<Gateway['parentOf']>): ReturnType<Gateway['parentOf']> { return this.gateway.parentOf(...a); }
  taskOwnerKey(...a: Parameters<Gateway['taskOwnerKey']>): ReturnType<Gateway['taskOwnerKey']> { return this.gateway.taskOwnerKey(...a); }

  // ---- turn operations (fenced) ----
  acquireLease(...a: Parameters<Turns['acquireLease']>): ReturnType<Turns['acquireLease']> { return this.turns.acquireLease(...a); }
  renewLease(...a: Parameters<Turns['renewLease']>): ReturnType<Turns['renewLease']> { return this.turns.renewLease(...a); }
  releaseLease(...a: Parameters<Turns['releaseLease']>): ReturnType<Turns['releaseLease']> { return this.turns.releaseLease(...a); }
  handBackTurn(...a: Parameters<Turns['handBackTurn']>): ReturnType<Turns['handBackTurn']> { return this.turns.handBackTurn(...a); }
  chargeBudget(...a: Parameters<Turns['chargeBudget']>): ReturnType<Turns['chargeBudget']> { return this.turns.chargeBudget(...a); }
  appendEvents(...a: Parameters<Turns['appendEvents']>): ReturnType<Turns['appendEvents']> { return this.turns.appendEvents(...a); }
  finishTurn(...a: Parameters<Turns['finishTurn']>): ReturnType<Turns['finishTurn']> { return this.turns.finishTurn(...a); }
  acknowledgeCancel(...a: Parameters<Turns['acknowledgeCancel']>): ReturnType<Turns['acknowledgeCancel']> { return this.turns.acknowledgeCancel(...a); }
  startStep(...a: Parameters<Turns['startStep']>): ReturnType<Turns['startStep']> { return this.turns.startStep(...a); }
  writeStep(...a: Parameters<Turns['writeStep']>): ReturnType<Turns['writeStep']> { return this.turns.writeStep(...a); }
  readSteps(...a: Parameters<Turns['readSteps']>): ReturnType<Turns['readSteps']> { return this.turns.readSteps(...a); }
  readAdapterState(...a: Parameters<Turns['readAdapterState']>): ReturnType<Turns['readAdapterState']> { return this.turns.readAdapterState(...a); }
  writeAdapterState(...a: Parameters<Turns['writeAdapterState']>): ReturnType<Turns['writeAdapterState']> { return this.turns.writeAdapterState(...a); }
  writeTurnRecord(...a: Parameters<Turns['writeTurnRecord']>): ReturnType<Turns['writeTurnRecord']> { return this.turns.writeTurnRecord(...a); }
  readTurnRecords(...a: Parameters<Turns['readTurnRecords']>): ReturnType<Turns['readTurnRecords']> { return this.turns.readTurnRecords(...a); }
  readContextHistory(...a: Parameters<Turns['readContextHistory']>): ReturnType<Turns['readContextHistory']> { return this.turns.readContextHistory(...a); }

  // ---- maintenance ----
  reconcileActiveEntry(...a: Parameters<Maintenance['reconcileActiveEntry']>): ReturnType<Maintenance['reconcileActiveEntry']> { return this.maintenance.reconcileActiveEntry(...a); }
  releaseLock(...a: Parameters<Maintenance['releaseLock']>): ReturnType<Maintenance['releaseLock']> { return this.maintenance.releaseLock(...a); }
  flushIndexesWithin(...a: Parameters<Maintenance['flushIndexesWithin']>): ReturnType<Maintenance['flushIndexesWithin']> { return this.maintenance.flushIndexesWithin(...a); }
}
