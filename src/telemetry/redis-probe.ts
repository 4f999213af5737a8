// Redis round-trip latency, measured by a PING every 30 s on a role's command connection: a
// steady sample for a2a_redis_roundtrip_seconds that costs one command per interval, never one
// per request or turn. Not more often: an idle process makes about one Redis call a second in
// all (docs/redis-slots.md), and a 10-minute alert window still gets 20 samples per role.
import type { RedisClient } from '../redis/connection.ts';
import { redisRoundTrip } from './metrics.ts';

const PROBE_INTERVAL_MS = 30_000;

/** Starts the probe; the returned function stops it. */
export function probeRedisRoundTrips(redis: RedisClient, role: 'gateway' | 'worker', intervalMs = PROBE_INTERVAL_MS): () => void {
  let inFlight = false;
  const timer = setInterval(() => {
    // A hung Redis would pile PINGs up; one at a time is enough to see it.
    if (inFlight || redis.status !== 'ready') return;
    inFlight = true;
    const stop = redisRoundTrip.startTimer({ role });
    redis
      .ping()
      .then(() => stop())
      .catch(() => undefined)
      .finally(() => {
        inFlight = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
