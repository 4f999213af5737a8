// What every role of the task store shares: the connection, the keys, the scripts and the
// indexes each write notes its change in (see task-store.ts for the roles).
import type { RedisClient } from '../redis/connection.ts';
import type { RedisKeys } from './keys.ts';
import type { ReplayBound } from './replay-bound.ts';
import type { RecentTaskIndex } from './recent-tasks.ts';
import type { ScriptRunner } from './scripts.ts';
import type { OwnerIndex } from './owner-index.ts';
import { callScript, type ScriptArgs, type ScriptDefinition, type ScriptEncoders, type ScriptKeys } from './script-call.ts';

/** The parts of a task store, made once (TaskStore) and shared by its roles. */
export interface StoreParts {
  redis: RedisClient;
  keys: RedisKeys;
  run: ScriptRunner;
  recentTasks: RecentTaskIndex;
  ownerIndex: OwnerIndex;
  /** How long a terminal task stays readable before Redis expires it. */
  retentionSeconds: number;
  replay: ReplayBound;
}

/** A role of the task store (gateway operations, turn operations, maintenance) over the shared parts. */
export abstract class StoreRole {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  /** Every task by when it last changed, for operators; noted after each write below that changes a task's state. */
  readonly recentTasks: RecentTaskIndex;
  /** The owner's indexes and active set, written after each task's own write (step 3, docs/redis-slots.md). */
  readonly ownerIndex: OwnerIndex;
  readonly retentionSeconds: number;
  readonly replay: ReplayBound;
  protected readonly run: ScriptRunner;

  constructor(parts: StoreParts) {
    this.redis = parts.redis;
    this.keys = parts.keys;
    this.recentTasks = parts.recentTasks;
    this.ownerIndex = parts.ownerIndex;
    this.retentionSeconds = parts.retentionSeconds;
    this.replay = parts.replay;
    this.run = parts.run;
  }

  /** Runs a script with its keys and arguments by name (script-call.ts); its reply decoded. */
  protected call<K extends string, E extends ScriptEncoders, R, V extends string = never>(
    definition: ScriptDefinition<K, E, R, V>,
    keys: ScriptKeys<K, V>,
    args: ScriptArgs<E>,
  ): Promise<R> {
    return callScript(this.run, definition, keys, args);
  }
}
