// Scenario `idle-redis`: what an idle gateway asks of Redis. A fresh gateway (gateway + workers,
// as `npm start` runs them) on a redis-server of its own settles, then Redis's counters are
// read over a window with no request sent: commands per second and the commands they are.

import { setTimeout as sleep } from 'node:timers/promises';
import { startGatewayOn } from '../bench-server.ts';
import { cpuTicks, type ServerName } from '../gateway-process.ts';
import { diffCounters } from '../own-redis.ts';

export interface IdleRedisResult {
  seconds: number;
  /** commandstats calls per second (top-level and inside scripts). */
  commandsPerSec: number;
  scriptsPerSec: number;
  /** Socket reads and writes per second (total_reads/writes_processed). */
  readsPerSec: number;
  writesPerSec: number;
  top: Array<[string, number]>;
  /** CPU ms per second while idle: gateway + workers, and Redis. */
  cpuMsPerSec: { gateway: number; redis: number };
}

export async function runIdleRedis(opts: { repoRoot: string; logDir: string; name: ServerName; settleSeconds: number; seconds: number; log: (m: string) => void }): Promise<IdleRedisResult> {
  const gateway = await startGatewayOn({ repoRoot: opts.repoRoot, logDir: opts.logDir, name: opts.name, ownRedis: true });
  const redis = gateway.redis;
  try {
    if (redis === undefined) throw new Error('idle-redis needs the gateway on its own redis-server');
    opts.log(`${opts.name}: pid ${gateway.pid}, own Redis ${redis.url}; settling ${opts.settleSeconds} s, then counting for ${opts.seconds} s`);
    await sleep(opts.settleSeconds * 1000);
    const before = await redis.snapshot();
    const gw0 = cpuTicks(gateway.pid);
    const r0 = redis.cpuTicks();
    const t0 = performance.now();
    await sleep(opts.seconds * 1000);
    const after = await redis.snapshot();
    const seconds = (performance.now() - t0) / 1000;
    const cpu = { gateway: ((cpuTicks(gateway.pid) - gw0) * 10) / seconds, redis: ((redis.cpuTicks() - r0) * 10) / seconds };
    const d = diffCounters(before, after);
    const per = (n: number): number => n / seconds;
    const scripts = ['evalsha', 'eval', 'fcall'].reduce((n, c) => n + (d.calls.get(c) ?? 0), 0);
    return {
      seconds,
      commandsPerSec: per([...d.calls.values()].reduce((a, b) => a + b, 0)),
      scriptsPerSec: per(scripts),
      readsPerSec: per(d.reads),
      writesPerSec: per(d.writes),
      top: [...d.calls].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([c, n]): [string, number] => [c, per(n)]),
      cpuMsPerSec: cpu,
    };
  } finally {
    await gateway.stop();
  }
}

export const describeIdleRedis = (r: IdleRedisResult): string =>
  `${r.commandsPerSec.toFixed(1)} Redis commands/s (${r.scriptsPerSec.toFixed(1)} scripts/s), ${r.readsPerSec.toFixed(1)} reads/s, ${r.writesPerSec.toFixed(1)} writes/s; ` +
  `top: ${r.top.map(([c, n]) => `${c} ${n.toFixed(1)}`).join(', ')}; CPU ms/s gateway ${r.cpuMsPerSec.gateway.toFixed(1)}, Redis ${r.cpuMsPerSec.redis.toFixed(1)}`;
