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

async function waitUntil(what: string, check: () => Promise<boolean>, state: () => string = () => ''): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > FAILOVER_BOUND_MS) throw new Error(`Redis Cluster: ${what} not reached within ${FAILOVER_BOUND_MS} ms ${state()}`);
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
      // FAIL, not PFAIL ("fail?"): the cluster agreed the node is down, and its replica took its slots.
      return line !== undefined && (line.split(' ')[2] ?? '').split(',').includes('fail') && !mastersOf(table ?? '').includes(`:${killedPort}@`);
    }),
  );
  return answers.every(Boolean);
}

/** The addresses of the nodes a CLUSTER NODES table lists as masters serving slots. */
const mastersOf = (table: string): string[] =>
  table
    .split('\n')
    .map((line) => line.trim().split(' '))
    .filter((fields) => (fields[2] ?? '').split(',').includes('master') && fields.length > 8)
    .map((fields) => fields[1] ?? '');

/** A master with a replica that is online: killing it tests a failover, not a lost shard. */
async function mastersWithReplica(nodes: readonly ClusterNode[]): Promise<ClusterNode[]> {
  const found: ClusterNode[] = [];
  for (const node of nodes.filter((each) => each.running)) {
    const info = await infoOf(node.port, 'replication');
    if (/role:master/.test(info) && /slave\d+:[^\n]*state=online/.test(info)) found.push(node);
  }
  return found;
}

/** The ports of a master's replicas, from its INFO replication. */
const replicaPortsOf = (info: string): number[] => [...info.matchAll(/slave\d+:[^\n]*port=(\d+)/g)].map((match) => Number(match[1]));

/**
 * A killed master started again usually learns from its peers that its slots moved and turns
 * replica of their new owner by itself; when it comes back an empty master instead, it is told
 * to replicate the node promoted in its place.
 */
async function rejoinAsReplica(node: ClusterNode, promotedPorts: readonly number[]): Promise<void> {
  const started = Date.now();
  let last = '';
  await waitUntil(`node on port ${node.port} back as a replica in sync`, async () => {
    const info = await infoOf(node.port, 'replication');
    last = info;
    if (/role:slave/.test(info)) return /master_link_status:up/.test(info) && /master_sync_in_progress:0/.test(info) && (await clusterServes([node], undefined));
    if (Date.now() - started < 5_000) return false;
    const table = (await ask(node.port, async (redis) => String(await redis.cluster('NODES')))) ?? '';
    const myself = table.split('\n').find((line) => line.includes('myself'));
    last = `${info}\n${table}`;
    const ownsSlots = myself !== undefined && myself.trim().split(' ').length > 8;
    if (ownsSlots) return false;
    for (const port of promotedPorts) {
      if (!/role:master/.test(await infoOf(port, 'replication'))) continue;
      const id = await ask(port, async (redis) => String(await redis.cluster('MYID')));
      if (id !== undefined) await ask(node.port, (redis) => redis.cluster('REPLICATE', id));
      break;
    }
    return false;
  }, () => `(its last state:\n${last})`);
}

export async function startChaosCluster(): Promise<ChaosCluster> {
  const cluster: OwnRedisCluster = await startRedisCluster({ nodeTimeoutMs: NODE_TIMEOUT_MS });
  const killed: { node: ClusterNode; replicaPorts: number[] }[] = [];
  return {
    seeds: cluster.seeds,
    async killMaster(random) {
      let masters: ClusterNode[] = [];
      await waitUntil('a master with an online replica', async () => (masters = await mastersWithReplica(cluster.nodes)).length > 0);
      const victim = random.pick(masters);
      const replicaPorts = replicaPortsOf(await infoOf(victim.port, 'replication'));
      await victim.kill();
      killed.push({ node: victim, replicaPorts });
      const failoverMs = await waitUntil(`failover of the master on port ${victim.port}`, () => clusterServes(cluster.nodes, victim.port));
      return { port: victim.port, failoverMs };
    },
    async restartKilled() {
      for (let entry = killed.shift(); entry !== undefined; entry = killed.shift()) {
        await entry.node.restart();
        await rejoinAsReplica(entry.node, entry.replicaPorts);
        await waitUntil('every node at cluster_state:ok', () => clusterServes(cluster.nodes, undefined));
      }
    },
    stop: () => cluster.stop(),
  };
}
