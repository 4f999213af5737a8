// The chaos run's own Redis Cluster (CHAOS_CLUSTER=1): three masters and three replicas
// (test/support/redis-cluster.ts) on free loopback ports, and its fault: SIGKILL a master,
// wait until its replica was promoted and serves its slots, then start the killed node again,
// which rejoins as the new master's replica. Only these processes are signalled, by pid.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startRedisCluster, type ClusterNode, type OwnRedisCluster } from '../test/support/redis-cluster.ts';
import type { Random } from './random.ts';

export interface ChaosCluster {
  /** host:port,… for A2A_REDIS_CLUSTER_NODES. */
  readonly seeds: string;
  /** SIGKILLs a master whose replica is in sync, waits for the failover; how long it took. */
  killMaster(random: Random): Promise<{ port: number; failoverMs: number }>;
  /** Starts the killed node again and waits until it is a replica in sync. */
  restartKilled(): Promise<void>;
  stop(): Promise<void>;
}

/** cluster-node-timeout: how long a master may be silent before its replica takes over. */
const NODE_TIMEOUT_MS = 2_000;
const FAILOVER_BOUND_MS = 30_000;

async function ask<T>(port: number, run: (redis: Redis) => Promise<T>): Promise<T | undefined> {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await run(redis);
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}

const infoOf = (port: number, section: string): Promise<string> => ask(port, (redis) => redis.info(section)).then((info) => info ?? '');
const clusterInfoOf = (port: number): Promise<string> => ask(port, async (redis) => String(await redis.cluster('INFO'))).then((info) => info ?? '');

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > FAILOVER_BOUND_MS) throw new Error(`Redis Cluster: ${what} not reached within ${FAILOVER_BOUND_MS} ms`);
    await sleep(100);
  }
  return Date.now() - started;
}

/** Every running node says cluster_state:ok, and none of them still counts `port` as a serving master. */
async function clusterServes(nodes: readonly ClusterNode[], killedPort: number | undefined): Promise<boolean> {
  const running = nodes.filter((node) => node.running);
  const answers = await Promise.all(
    running.map(async (node) => {
      const ok = /cluster_state:ok/.test(await clusterInfoOf(node.port));
      if (!ok || killedPort === undefined) return ok;
      const table = await ask(node.port, async (redis) => String(await redis.cluster('NODES')));
      const line = (table ?? '').split('\n').find((entry) => entry.includes(`:${killedPort}@`));
      return line !== undefined && /\bfail\b/.test(line);
    }),
  );
  return answers.every(Boolean);
}

/** A master with a replica that is online: killing it tests a failover, not a lost shard. */
async function mastersWithReplica(nodes: readonly ClusterNode[]): Promise<ClusterNode[]> {
  const found: ClusterNode[] = [];
  for (const node of nodes.filter((each) => each.running)) {
    const info = await infoOf(node.port, 'replication');
    if (/role:master/.test(info) && /slave\d+:[^\n]*state=online/.test(info)) found.push(node);
  }
  return found;
}

export async function startChaosCluster(): Promise<ChaosCluster> {
  const cluster: OwnRedisCluster = await startRedisCluster({ nodeTimeoutMs: NODE_TIMEOUT_MS });
  const killed: ClusterNode[] = [];
  return {
    seeds: cluster.seeds,
    async killMaster(random) {
      const masters = await mastersWithReplica(cluster.nodes);
      if (masters.length === 0) throw new Error('Redis Cluster: no master has an online replica to fail over to');
      const victim = random.pick(masters);
      await victim.kill();
      killed.push(victim);
      const failoverMs = await waitUntil(`failover of the master on port ${victim.port}`, () => clusterServes(cluster.nodes, victim.port));
      return { port: victim.port, failoverMs };
    },
    async restartKilled() {
      for (let node = killed.shift(); node !== undefined; node = killed.shift()) {
        const back = node;
        await back.restart();
        await waitUntil(`node on port ${back.port} back as a replica in sync`, async () => {
          const info = await infoOf(back.port, 'replication');
          return /role:slave/.test(info) && /master_link_status:up/.test(info) && /master_sync_in_progress:0/.test(info) && (await clusterServes(cluster.nodes, undefined));
        });
      }
    },
    stop: () => cluster.stop(),
  };
}
