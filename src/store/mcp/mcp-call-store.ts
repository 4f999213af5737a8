import { createHash } from 'node:crypto';
import type { RedisClient } from '../../redis/connection.ts';

/** The A2A task a tools/call in progress opened, as `<agent>:<task id>`, or the mark of a call cancelled first. */
export type CallSlot = { kind: 'task'; ref: string } | { kind: 'cancelled' } | undefined;

const CANCELLED = '!cancelled';

/**
 * Which A2A task each MCP tools/call in progress opened, per caller, MCP session and JSON-RPC
 * request id: the client's notifications/cancelled names only the request, and arrives on
 * another HTTP request, possibly at another gateway. Each side writes its half with one
 * SET … GET, so whichever comes second sees the other's (a cancel that overtook its call marks
 * the slot; the call, once it has a task, finds the mark and cancels it). Entries expire; they
 * are a hint for cancellation only, never the task's owner check (CancelTask does that).
 */
export class McpCallStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
  ) {}

  /** The caller and session are hashed with the request id: a key of bounded length, whatever they hold. */
  key(caller: string, session: string, requestId: string | number): string {
    const digest = createHash('sha256').update(`${caller}\n${session}\n${typeof requestId}:${requestId}`).digest('base64url');
    return `${this.keyPrefix}:mcpcall:${digest}`;
  }

  private static read(previous: string | null): CallSlot {
    if (previous === null) return undefined;
    return previous === CANCELLED ? { kind: 'cancelled' } : { kind: 'task', ref: previous };
  }

  /** Records the call's task; answers what was there before (a cancel that came first). */
  async openCall(key: string, taskRef: string, ttlMs: number): Promise<CallSlot> {
    return McpCallStore.read(await this.redis.set(key, taskRef, 'PX', Math.max(1, Math.ceil(ttlMs)), 'GET'));
  }

  /** Marks the call cancelled; answers the task it opened, if it has one yet. */
  async cancelCall(key: string, ttlMs: number): Promise<CallSlot> {
    return McpCallStore.read(await this.redis.set(key, CANCELLED, 'PX', Math.max(1, Math.ceil(ttlMs)), 'GET'));
  }

  /** The call has answered: nothing is left to cancel through it. */
  async closeCall(key: string): Promise<void> {
    await this.redis.del(key);
  }
}
