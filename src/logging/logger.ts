import { pino } from 'pino';

export type LogFields = Record<string, unknown>;

/** The few log calls the gateway makes; backed by pino (JSON lines on stderr). */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export function createLogger(level: 'debug' | 'info' | 'warn' | 'error' | 'silent', name = 'a2a-gateway'): Logger {
  const base = pino({ name, level }, pino.destination(2));
  return {
    debug: (message, fields) => base.debug(fields ?? {}, message),
    info: (message, fields) => base.info(fields ?? {}, message),
    warn: (message, fields) => base.warn(fields ?? {}, message),
    error: (message, fields) => base.error(fields ?? {}, message),
  };
}
