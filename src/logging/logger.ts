import { pino } from 'pino';
import { activeTraceIds } from '../telemetry/spans.ts';
import { currentLogScope } from './log-scope.ts';

export type LogFields = Record<string, unknown>;

/** The few log calls the gateway makes; backed by pino (JSON lines on stderr). */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/**
 * Every line written inside a turn or a delivery carries its taskId and contextId (log-scope.ts)
 * and, while tracing is on, the traceId and spanId of the span it was written in, so a log
 * search and a trace view lead to each other.
 */
function scopeFields(): LogFields {
  const scope = currentLogScope();
  const ids = activeTraceIds();
  if (scope === undefined && ids === undefined) return {};
  return { ...scope, ...ids };
}

export function createLogger(level: 'debug' | 'info' | 'warn' | 'error' | 'silent', name = 'a2a-gateway', destination: pino.DestinationStream = pino.destination(2)): Logger {
  // Fields given to a call win over the scope's (pino merges the call's object over the mixin's).
  const base = pino({ name, level, mixin: scopeFields }, destination);
  return {
    debug: (message, fields) => base.debug(fields ?? {}, message),
    info: (message, fields) => base.info(fields ?? {}, message),
    warn: (message, fields) => base.warn(fields ?? {}, message),
    error: (message, fields) => base.error(fields ?? {}, message),
  };
}
