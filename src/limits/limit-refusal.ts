// Every refusal by a configured limit goes through here: the error names the limit it enforces,
// and noteLimitRefusal is the one place that sees each refusal as it happens (counting them by
// limit, e.g. for /metrics, is one line in it).
import { A2AError, type A2AErrorKind, type FieldViolation } from '../protocol/errors.ts';

/** The limits a caller can run into, by the setting (or fixed bound) that decides each one. */
export type LimitName =
  | 'maxHeaderCount'
  | 'maxBodyBytes'
  | 'jsonLimits'
  | 'maxRequestIdLength'
  | 'maxConnections'
  | 'maxConnectionsPerAddress'
  | 'sseMaxBufferedBytes'
  | 'limits.requestsPerSecond'
  | 'limits.ingressBytesPerSecond'
  | 'limits.storedBytesPerSecond'
  | 'limits.unauthenticatedPerSecond'
  | 'limits.maxActiveTasks'
  | 'limits.maxQueuedMessages'
  | 'limits.maxStoredBytes'
  | 'limits.maxStoredTasks'
  | 'limits.maxStreamsPerOwner'
  | 'limits.maxStreams'
  | 'limits.maxConcurrentListsPerOwner'
  | 'maxQueuedTurns'
  | 'push.maxConfigsPerTask'
  | 'push.maxSubscriptionsPerOwner'
  | 'schedules.maxPerOwner'
  // What a turn may store, and the size of one Redis command (output-limits.ts, redis/command-guard.ts).
  | 'limits.maxArtifactBytes'
  | 'limits.maxTurnOutputBytes'
  | 'limits.maxTaskOutputBytes'
  | 'redisMaxCommandBytes'
  // A consumer's plan (src/consumers): requests and new tasks refused, turns stopped at a budget.
  | 'consumer.requestsPerSecond'
  | 'consumer.concurrentTasks'
  | 'consumer.tasksPerDay'
  | 'consumer.modelTokensPerDay'
  | 'consumer.spendPerMonth';

type RefusalListener = (limit: LimitName) => void;
const listeners: RefusalListener[] = [];

/** Called once for every request or connection a limit refused. */
export function noteLimitRefusal(limit: LimitName): void {
  for (const listener of listeners) listener(limit);
}

/** Observes refusals (tests; a metrics counter). Returns a function that stops observing. */
export function onLimitRefusal(listener: RefusalListener): () => void {
  listeners.push(listener);
  return () => {
    const at = listeners.indexOf(listener);
    if (at >= 0) listeners.splice(at, 1);
  };
}

export interface LimitRefusalOptions {
  metadata?: Record<string, string>;
  violations?: FieldViolation[];
  httpStatus?: number;
  retryAfterSeconds?: number;
}

/** An A2A error that refuses a request because of `limit`; constructing it counts the refusal. */
export class LimitExceededError extends A2AError {
  readonly limit: LimitName;

  constructor(limit: LimitName, kind: A2AErrorKind, message: string, options: LimitRefusalOptions = {}) {
    super(kind, message, { ...options, metadata: { ...options.metadata, limitName: limit } });
    this.name = 'LimitExceededError';
    this.limit = limit;
    noteLimitRefusal(limit);
  }
}
