// A client cancelling a tools/call in progress (notifications/cancelled, MCP's cancellation
// utility) cancels the A2A task the call opened. The server is stateless, so the notification
// arrives on another HTTP request, possibly at another gateway, and names only the JSON-RPC
// request id, which each client counts from 0: the gateway hands out an Mcp-Session-Id at
// initialize (nothing is kept for it) so a request id is one client's, and the call's task is
// found through the store (the caller, the session and the request id). A client that sends no
// session id cannot cancel this way: whose request it means is unknown; tasks/cancel still works.
import type { Principal } from '../auth/principal.ts';
import type { McpCallStore } from '../store/mcp/mcp-call-store.ts';

export interface CallTracking {
  store: McpCallStore;
  /** The caller's tenant and subject: another caller's notification never finds this one's calls. */
  caller: string;
  /** The Mcp-Session-Id the client sent back. */
  session: string;
  /** How long an entry outlives its write: the longest a call waits, and some. */
  ttlMs: number;
}

/** Cancels one A2A task (`<agent>:<task id>`) on the caller's behalf: CancelTask, owner-scoped. */
export type CancelTaskRef = (taskRef: string) => Promise<void>;

export const callerOf = (principal: Principal): string => `${encodeURIComponent(principal.tenant)}/${encodeURIComponent(principal.subject)}`;

/** A session id as the MCP transport allows it (visible ASCII), bounded; anything else is not one of ours. */
export const SESSION_ID_PATTERN = /^[\x21-\x7E]{1,128}$/;

/**
 * Records the task a call opened, so a cancel for its request finds it; a cancel that came first
 * is carried out now. Answers what closes the record once the call has answered.
 */
export async function trackCall(tracking: CallTracking | undefined, requestId: string | number, taskRef: string, cancel: CancelTaskRef): Promise<() => Promise<void>> {
  if (tracking === undefined) return async () => undefined;
  const key = tracking.store.key(tracking.caller, tracking.session, requestId);
  const before = await tracking.store.openCall(key, taskRef, tracking.ttlMs);
  if (before?.kind === 'cancelled') await cancel(taskRef);
  return () => tracking.store.closeCall(key);
}

/** notifications/cancelled: the task of the caller's call with that request id is cancelled, if it has one yet (else when it does). */
export async function cancelTrackedCall(tracking: CallTracking | undefined, requestId: string | number, cancel: CancelTaskRef): Promise<'cancelled' | 'pending' | 'untracked'> {
  if (tracking === undefined) return 'untracked';
  const slot = await tracking.store.cancelCall(tracking.store.key(tracking.caller, tracking.session, requestId), tracking.ttlMs);
  if (slot?.kind !== 'task') return 'pending';
  await cancel(slot.ref);
  return 'cancelled';
}
