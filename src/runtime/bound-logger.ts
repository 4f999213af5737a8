// The logger an adapter gets as ctx.logger: the gateway's, with the turn's fields on every line.
import type { LogFields, Logger } from '../logging/logger.ts';

const SILENT: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** A logger that puts `bound` on every line (the line's own fields win); silent without a logger. */
export function boundLogger(logger: Logger | undefined, bound: LogFields): Logger {
  if (logger === undefined) return SILENT;
  return {
    debug: (message, fields) => logger.debug(message, { ...bound, ...fields }),
    info: (message, fields) => logger.info(message, { ...bound, ...fields }),
    warn: (message, fields) => logger.warn(message, { ...bound, ...fields }),
    error: (message, fields) => logger.error(message, { ...bound, ...fields }),
  };
}
