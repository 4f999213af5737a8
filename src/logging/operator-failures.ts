// The failures an operator must act on, each logged as one line of one shape: a fixed message
// per class (what alerts and log searches match), the class itself in `failure`, what went wrong
// in `cause`, and the ids that lead to the task, its owner and its trace. The table of classes
// with what to do about each is in docs/observability.md; keep the two in step.
import type { LogFields, Logger } from './logger.ts';

export const FAILURE_CLASSES = {
  /** A downstream agent or model server unreachable or answering 408/429/5xx: the call is retried with backoff. */
  'backend-unavailable': { level: 'warn', message: 'backend unavailable; retrying with backoff' },
  /** A turn ended TASK_STATE_FAILED: `cause` is the reason the task's status gives. */
  'turn-failed': { level: 'error', message: 'turn failed' },
  /** The worker running a turn was lost (killed, or its lease lapsed); another worker runs the turn again. */
  'worker-lost': { level: 'warn', message: 'turn retried after worker loss' },
  /** An issuer's JWKS could not be fetched: its tokens are refused with 503 until it can. */
  'jwks-fetch-failed': { level: 'warn', message: 'issuer keys could not be fetched' },
  /** An issuer configured by its URL alone could not be discovered: its tokens are verified with the keys it had, or refused (401) if it never had any. */
  'issuer-discovery-failed': { level: 'warn', message: 'issuer discovery failed' },
  /** A webhook delivery will not be tried again: it is kept as a dead letter. */
  'push-dead-lettered': { level: 'warn', message: 'push delivery dead-lettered' },
  /** A schedule's planned firing did not run (missed, too soon, or refused). */
  'schedule-misfire': { level: 'warn', message: 'schedule misfire' },
  /** The configuration (settings or an agent's adapter options) was refused at start. */
  'config-rejected': { level: 'error', message: 'configuration rejected' },
} as const satisfies Record<string, { level: 'warn' | 'error'; message: string }>;

export type FailureClass = keyof typeof FAILURE_CLASSES;

/**
 * The fields every failure line may carry. `cause` is required; the ids are there whenever the
 * failure concerns them (a JWKS fetch has no task). `owner` is the owner key
 * (`<agent>/<tenant>/<subject>`), as `tasks inspect` shows it.
 */
export interface FailureFields extends LogFields {
  cause: string;
  taskId?: string;
  contextId?: string;
  agent?: string;
  owner?: string;
  traceId?: string;
}

/** Writes the one line of `failure`; the fields bound to `logger` (taskId, traceId, …) come along. */
export function logFailure(logger: Logger, failure: FailureClass, fields: FailureFields): void {
  const { level, message } = FAILURE_CLASSES[failure];
  logger[level](message, { failure, ...fields });
}

/** What an error says, one line, for `cause` (the error's own cause appended when it adds something). */
export function causeOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const inner = (error as { cause?: unknown }).cause;
  const innerText = inner instanceof Error ? (((inner as { code?: unknown }).code as string | undefined) ?? inner.message) : undefined;
  return innerText !== undefined && innerText !== '' && !error.message.includes(innerText) ? `${error.message} (${innerText})` : error.message;
}

/** A backend's origin, for `backend` (never a path or query that might carry a secret). */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(not a URL)';
  }
}
