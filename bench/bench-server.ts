// A server the bench measures, with what its cost is read from: the gateway's own redis-server
// (bench/own-redis.ts) or the database processes an SDK anchor works through (bench/anchors.ts).

import { startGateway, type GatewayStartOptions, type ServerChild } from './gateway-process.ts';
import { startOwnRedis, type OwnRedis } from './own-redis.ts';
import type { CostSources } from './load/cost.ts';

export interface BenchServer extends ServerChild {
  /** The gateway's own redis-server, when it has one (BENCH_OWN_REDIS). */
  readonly redis?: OwnRedis;
  /** PIDs of the database processes working for an SDK anchor. */
  readonly dbPids?: () => Promise<number[]>;
}

/** Where a round's CPU and Redis counters are read for this server. */
export function costSources(s: BenchServer): CostSources {
  return { pid: s.pid, ...(s.redis ? { redis: s.redis } : {}), ...(s.dbPids ? { dbPids: s.dbPids } : {}) };
}

/**
 * startGateway, on a redis-server of its own when `ownRedis` (started first, stopped after the
 * gateway); otherwise on opts.redisUrl as before, where Redis's CPU and counters are shared.
 */
export async function startGatewayOn(opts: GatewayStartOptions & { ownRedis: boolean }): Promise<BenchServer> {
  if (!opts.ownRedis) return startGateway(opts);
  const redis = await startOwnRedis({ logDir: opts.logDir, name: opts.name ?? 'gateway' });
  try {
    const gateway = await startGateway({ ...opts, redisUrl: redis.url });
    return {
      ...gateway,
      redis,
      async stop() {
        await gateway.stop();
        await redis.stop();
      },
    };
  } catch (err) {
    await redis.stop();
    throw err;
  }
}
