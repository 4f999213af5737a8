// GET /readyz: whether this gateway can serve requests now, answered within a second even when
// Redis hangs (a stopped process answers nothing; a PING would wait redisCommandTimeoutMs).
// Anonymous callers learn only that it is not ready; the cause goes to the log.
import type { Redis } from 'ioredis';
import type { Logger } from '../logging/logger.ts';

/** Longest /readyz waits for Redis to answer PING. */
export const READINESS_TIMEOUT_MS = 750;

export type Readiness = { ready: true } | { ready: false; reason: string };

export async function checkReadiness(redis: Redis, logger: Logger, timeoutMs = READINESS_TIMEOUT_MS): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const answer = await Promise.race([redis.ping().then(() => 'pong' as const), timedOut]);
    if (answer === 'pong') return { ready: true };
    logger.warn('readiness check: Redis did not answer PING in time', { timeoutMs });
  } catch (error) {
    logger.warn('readiness check: Redis PING failed', { error: (error as Error).message });
  } finally {
    clearTimeout(timer);
  }
  return { ready: false, reason: 'the task store is not answering' };
}
