// How a process stops on SIGTERM or SIGINT: everything it runs closes in order (the gateway
// ends its streams, workers let running turns finish for shutdownGraceMs and hand the rest
// back), then it exits 0; a close that hangs past the grace and a margin exits 1, so a deploy
// never waits on a stuck process longer than the platform was told to wait.
import type { Logger } from '../logging/logger.ts';

/**
 * How long past shutdownGraceMs a stopping process may take (ending streams, handing turns back,
 * closing connections) before it exits anyway. A platform's kill timeout
 * (terminationGracePeriodSeconds, stop_grace_period) should be at least shutdownGraceMs plus this.
 */
export const SHUTDOWN_MARGIN_MS = 20_000;

export interface GracefulStopOptions {
  shutdownGraceMs: number;
  /** Closed one after another, in this order. */
  closers: { name: string; close: () => Promise<void> }[];
  /** Called first, synchronously (readiness says not-ready from then on). */
  onStopping?: () => void;
  logger: Logger;
  exit: (code: number) => void;
}

/** Returns the stop function to call with the signal's name; a second call does nothing. */
export function gracefulStop(options: GracefulStopOptions): (signal: string) => Promise<void> {
  let stopping = false;
  return async (signal) => {
    if (stopping) return;
    stopping = true;
    options.logger.info('shutting down', { signal, shutdownGraceMs: options.shutdownGraceMs });
    options.onStopping?.();
    const deadline = setTimeout(() => {
      options.logger.error('shutdown took longer than shutdownGraceMs plus the margin; exiting anyway', { shutdownGraceMs: options.shutdownGraceMs, marginMs: SHUTDOWN_MARGIN_MS });
      options.exit(1);
    }, options.shutdownGraceMs + SHUTDOWN_MARGIN_MS);
    deadline.unref();
    for (const closer of options.closers) {
      await closer.close().catch((error: Error) => options.logger.error(`${closer.name} close failed`, { error: error.message }));
    }
    clearTimeout(deadline);
    options.exit(0);
  };
}
