import { pino } from 'pino';

export type LogFields = Record<string, unknown>;

/** The few log calls the gateway makes; backed by pino (JSON lines on stderr). */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/**
 * A logger whose every line carries `fields` (a turn's taskId and contextId and, tracing on, its
 * span's traceId and spanId, so a log search and a trace view lead to each other); a call's own
 * fields win. Trace ids are bound like any other field, not looked up per line: no
 * AsyncLocalStorage is involved, which on Node 20 would slow every promise of the process.
 */
export function withFields(logger: Logger, fields: LogFields): Logger {
  return {
    debug: (message, more) => logger.debug(message, { ...fields, ...more }),
    info: (message, more) => logger.info(message, { ...fields, ...more }),
    warn: (message, more) => logger.warn(message, { ...fields, ...more }),
    error: (message, more) => logger.error(message, { ...fields, ...more }),
  };
}

export function createLogger(level: 'debug' | 'info' | 'warn' | 'error' | 'silent', name = 'a2a-gateway', destination: pino.DestinationStream = pino.destination(2)): Logger {
  const base = pino({ name, level }, destination);
  return {
    debug: (message, fields) => base.debug(fields ?? {}, message),
    info: (message, fields) => base.info(fields ?? {}, message),
    warn: (message, fields) => base.warn(fields ?? {}, message),
    error: (message, fields) => base.error(fields ?? {}, message),
  };
}
