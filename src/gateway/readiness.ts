// GET /readyz: whether this process can do its work now, answered within a second even when
// Redis hangs (a stopped process answers nothing; a PING would wait redisCommandTimeoutMs).
// Ready means: not draining for shutdown, RedisClient answers PING, the Lua scripts are loaded (a
// Redis restart empties its script cache; they are loaded again here, so the first requests
// after it do not each pay for it), and the turn queue answers on its own connection.
// Anonymous callers learn only that it is not ready and, when draining, that it is shutting
// down; the cause goes to the log.
import type { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connection.ts';
import type { Logger } from '../logging/logger.ts';
import { prepareStore } from '../store/store-ready.ts';

/** Longest /readyz waits for Redis to answer. */
export const READINESS_TIMEOUT_MS = 750;

export type Readiness = { ready: true } | { ready: false; reason: string };

export interface ReadinessProbe {
  /** The command connection the process's requests or turns use. */
  redis: RedisClient;
  /** A queue this process adds to or takes from (its own connection). */
  queue?: Pick<Queue, 'getJobCounts'>;
  /** The control plane's own readiness (its view current: src/control/control-plane.ts), asked after the store's. */
  control?: () => Promise<Readiness>;
  /** True once shutdown began: not ready, so load balancers stop sending work. */
  draining: () => boolean;
  logger: Logger;
  timeoutMs?: number;
}

export const NOT_READY_DRAINING = 'shutting down';
export const NOT_READY_STORE = 'the task store is not answering';

export async function checkReadiness(probe: ReadinessProbe): Promise<Readiness> {
  if (probe.draining()) return { ready: false, reason: NOT_READY_DRAINING };
  const timeoutMs = probe.timeoutMs ?? READINESS_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const checks = async (): Promise<'ok' | Readiness> => {
    await prepareStore(probe.redis);
    await probe.queue?.getJobCounts('waiting');
    const control = await probe.control?.();
    return control === undefined || control.ready ? 'ok' : control;
  };
  try {
    const answer = await Promise.race([checks(), timedOut]);
    if (answer === 'ok') return probe.draining() ? { ready: false, reason: NOT_READY_DRAINING } : { ready: true };
    if (answer !== 'timeout') return answer;
    probe.logger.warn('readiness check: RedisClient did not answer in time', { timeoutMs });
  } catch (error) {
    probe.logger.warn('readiness check failed', { error: (error as Error).message });
  } finally {
    clearTimeout(timer);
  }
  return { ready: false, reason: NOT_READY_STORE };
}
