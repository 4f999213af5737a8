// Per-owner storage quotas (limits.maxStoredBytes, limits.maxStoredTasks). What a caller's
// messages take is charged when a message is accepted, inside the accept scripts and beside the
// active-task claim (the owner's slot: `{o:<ownerKey>}`), so a refused message stores nothing
// and an accepted one is always charged. A charge is released when its task expires: tasks
// expire by TTL, without telling anyone, so each charged task has a check time in the owner's
// slot, and a bounded sweep looks at the due ones (each in its own slot), releases those gone
// and looks again later at those still there. See docs/hardening.md.
import type { RedisClient } from '../redis/connection.ts';
import type { Message } from '../protocol/types.ts';
import { storedOnce } from '../store/creation-event.ts';
import { QuotaStore } from '../store/limits/quota-store.ts';
import type { OverQuota, QuotaCharge } from '../store/task-store.ts';
import { LimitExceededError } from './limit-refusal.ts';

export interface StorageLimits {
  /** 0 = no quota. */
  maxStoredBytes: number;
  /** 0 = no quota. */
  maxStoredTasks: number;
}

/**
 * Copies of a message the store keeps. A follow-up is in the history (or the inbox, until a turn
 * takes it): one. A new task's first message is in its history, and its creation event in the
 * replay buffer refers to the history instead of holding the message again, unless the message is
 * small enough to be kept in both (src/store/creation-event.ts): one copy, or two for a small one.
 */
export const STORED_COPIES = {
  newTask: (messageBytes: number): number => (storedOnce(messageBytes) ? 1 : 2),
  followUp: (): number => 1,
} as const;

/** A charged task is first looked at this long after its charge (a create that failed half-way has left nothing by then). */
const FIRST_CHECK_DELAY_MS = 60_000;
/** A task still open is looked at again this much later (an open task never expires; once it ends, its TTL says when). */
const OPEN_RECHECK_MS = 10 * 60_000;
/** Due checks one sweep looks at. */
const SWEEP_BATCH = 100;
/** Longest retry hint given with a refusal. */
const MAX_RETRY_HINT_SECONDS = 3600;

export class StorageQuota {
  private readonly store: QuotaStore;
  private readonly sweeping = new Set<string>();

  constructor(
    redis: RedisClient,
    prefix: string,
    readonly limits: StorageLimits,
  ) {
    this.store = new QuotaStore(redis, prefix);
  }

  get enabled(): boolean {
    return this.limits.maxStoredBytes > 0 || this.limits.maxStoredTasks > 0;
  }

  /**
   * What storing `message` (kept `copies(its JSON bytes)` times, see STORED_COPIES) charges, or
   * undefined when no quota is on. `messageBytes`: its JSON bytes, when the caller counted them already.
   */
  chargeFor(message: Message, copies: (messageBytes: number) => number, nowMs: number, messageBytes?: number): QuotaCharge | undefined {
    if (!this.enabled) return undefined;
    const bytes = messageBytes ?? Buffer.byteLength(JSON.stringify(message));
    return {
      bytes: bytes * copies(bytes),
      maxBytes: this.limits.maxStoredBytes,
      maxTasks: this.limits.maxStoredTasks,
      checkAtMs: nowMs + FIRST_CHECK_DELAY_MS,
    };
  }

  /**
   * Looks at up to SWEEP_BATCH of the owner's due checks: charges of tasks that are gone are
   * released, the others are looked at again when their TTL ends (or later, while open).
   * Returns the bytes and tasks released.
   */
  async sweep(ownerKey: string, nowMs = Date.now()): Promise<{ bytes: number; tasks: number }> {
    const due = await this.store.dueChecks(ownerKey, nowMs, SWEEP_BATCH);
    if (due.length === 0) return { bytes: 0, tasks: 0 };
    const ttls = await this.store.taskTtls(due);
    const gone: string[] = [];
    const later: Record<string, number> = {};
    for (const [i, taskId] of due.entries()) {
      const ttlMs = ttls[i] ?? Number.NaN;
      if (ttlMs === -2) gone.push(taskId);
      else if (ttlMs >= 0) later[taskId] = nowMs + ttlMs + 1_000;
      else later[taskId] = nowMs + OPEN_RECHECK_MS; // open (no TTL), or the read failed: look again later
    }
    return this.store.release(ownerKey, gone, later);
  }

  /** A sweep that nobody waits for, one per owner at a time (after a charge found due checks). */
  sweepSoon(ownerKey: string): void {
    if (this.sweeping.has(ownerKey)) return;
    this.sweeping.add(ownerKey);
    void this.sweep(ownerKey)
      .catch(() => undefined)
      .finally(() => this.sweeping.delete(ownerKey));
  }

  /** What the owner has stored now: bytes and tasks as charged. */
  usage(ownerKey: string): Promise<{ bytes: number; tasks: number }> {
    return this.store.usage(ownerKey);
  }

  /** The refusal of a message that would pass the owner's quota (429, with when a charge may next be released). */
  refusal(over: OverQuota, nowMs = Date.now()): LimitExceededError {
    const retryAfterSeconds =
      over.nextCheckAtMs === undefined ? undefined : Math.min(MAX_RETRY_HINT_SECONDS, Math.max(1, Math.ceil((over.nextCheckAtMs - nowMs) / 1000)));
    const hint = retryAfterSeconds === undefined ? '' : ` Retry after ${retryAfterSeconds} s, when one of your tasks may have expired.`;
    const expiry = 'Stored tasks are released when they expire (retentionSeconds after they end).';
    if (over.quota === 'tasks') {
      return new LimitExceededError(
        'limits.maxStoredTasks',
        'RESOURCE_EXHAUSTED',
        `You have ${over.stored} tasks of this agent stored, the most allowed (limits.maxStoredTasks); nothing was stored. ${expiry}${hint}`,
        { ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }), metadata: { reason: 'STORAGE_QUOTA_TASKS', limit: String(this.limits.maxStoredTasks), stored: String(over.stored) } },
      );
    }
    return new LimitExceededError(
      'limits.maxStoredBytes',
      'RESOURCE_EXHAUSTED',
      `Your stored messages with this agent take ${over.stored} bytes; this one would pass the ${this.limits.maxStoredBytes} allowed (limits.maxStoredBytes); nothing was stored. ${expiry}${hint}`,
      { ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }), metadata: { reason: 'STORAGE_QUOTA_BYTES', limit: String(this.limits.maxStoredBytes), stored: String(over.stored) } },
    );
  }
}
