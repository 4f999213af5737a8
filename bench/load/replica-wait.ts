// The cost of WAIT-acknowledged writes (redisWaitReplicas): blocking SendMessage on two gateways
// (each with its in-process worker, like `npm start`) on one primary with one replica that this
// scenario starts, never the shared Redis: redisWaitReplicas 0 vs 1. Rounds alternate which
// setting goes first, so drift of the (shared) machine hits both alike.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startOwnRedis, type OwnRedis } from '../../test/support/redis-server.ts';
import { startGateway, type ServerChild } from '../gateway-process.ts';
import { runSendMessageLoad, type SendMessageLoadResult } from './send-message.ts';

export interface ReplicaWaitResult {
  off: SendMessageLoadResult[];
  on: SendMessageLoadResult[];
  /** WAIT calls the primary served during the "on" rounds, per "on" request answered. */
  waitsPerRequest: number;
}

async function replicaFollows(replica: Redis): Promise<void> {
  for (let i = 0; i < 150; i++) {
    if (/master_link_status:up/.test(await replica.info('replication'))) return;
    await sleep(100);
  }
  throw new Error('the bench replica did not start following its primary within 15 s');
}

const waitCalls = async (primary: Redis): Promise<number> => Number(/cmdstat_wait:calls=(\d+)/.exec(await primary.info('commandstats'))?.[1] ?? 0);

export async function runReplicaWait(opts: {
  repoRoot: string;
  logDir: string;
  connections: number;
  seconds: number;
  rounds: number;
  warmupSeconds: number;
  log: (line: string) => void;
}): Promise<ReplicaWaitResult> {
  let primary: OwnRedis | undefined;
  let replica: OwnRedis | undefined;
  const gateways: ServerChild[] = [];
  const clients: Redis[] = [];
  try {
    primary = await startOwnRedis();
    replica = await startOwnRedis({ args: ['--replicaof', '127.0.0.1', new URL(primary.url).port] });
    const primaryClient = new Redis(primary.url);
    const replicaClient = new Redis(replica.url);
    clients.push(primaryClient, replicaClient);
    await replicaFollows(replicaClient);
    opts.log(`replica wait: primary ${primary.url}, replica ${replica.url} following`);
    const start = (name: 'wait-off' | 'wait-on', replicas: number): Promise<ServerChild> =>
      startGateway({ repoRoot: opts.repoRoot, logDir: opts.logDir, redisUrl: primary?.url, name, env: { A2A_REDIS_WAIT_REPLICAS: String(replicas), A2A_REDIS_WAIT_TIMEOUT_MS: '1000' } });
    const off = await start('wait-off', 0);
    gateways.push(off);
    const on = await start('wait-on', 1);
    gateways.push(on);
    const load = (server: ServerChild, seconds: number): Promise<SendMessageLoadResult> =>
      runSendMessageLoad({ url: server.jsonRpcUrl, connections: opts.connections, seconds, returnImmediately: false });
    if (opts.warmupSeconds > 0) {
      await load(off, opts.warmupSeconds);
      await load(on, opts.warmupSeconds);
    }
    const result: ReplicaWaitResult = { off: [], on: [], waitsPerRequest: 0 };
    let waits = 0;
    for (let round = 1; round <= opts.rounds; round++) {
      const order: ['off' | 'on', ServerChild][] = round % 2 === 1 ? [['off', off], ['on', on]] : [['on', on], ['off', off]];
      for (const [setting, server] of order) {
        const before = await waitCalls(primaryClient);
        const res = await load(server, opts.seconds);
        if (setting === 'on') waits += (await waitCalls(primaryClient)) - before;
        result[setting].push(res);
        opts.log(`replica wait round ${round}/${opts.rounds} ${setting}: ${res.requestsPerSec.toFixed(0)} req/s, p50 ${res.p50Ms.toFixed(1)} ms, p99 ${res.p99Ms.toFixed(1)} ms, ok ${res.ok}, non-2xx ${res.non2xx}, bad ${res.badBodies}`);
      }
    }
    const answered = result.on.reduce((sum, res) => sum + res.ok, 0);
    result.waitsPerRequest = answered === 0 ? Number.NaN : waits / answered;
    return result;
  } finally {
    for (const gateway of gateways) await gateway.stop().catch(() => undefined);
    for (const client of clients) client.disconnect();
    await replica?.stop();
    await primary?.stop();
  }
}
