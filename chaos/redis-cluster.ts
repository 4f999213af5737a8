// The chaos run's own Redis Cluster (CHAOS_CLUSTER=1): three masters and three replicas
// (test/support/redis-cluster.ts) on free loopback ports, and its fault: SIGKILL a master,
// wait until its replica was promoted and serves its slots, then bring the killed node back as
// a brand-new node that replicates the promoted one. Only these processes are signalled, by pid.
//
// Why not simply restart it with its nodes.conf: without persistence, a master started again
// with its old identity once kept its slots and made the promoted replica its replica, which
// emptied that shard. A node with a new id, no slots and no data can only join as what it is told.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startRedisCluster, type ClusterNode, type OwnRedisCluster } from '../test/support/redis-cluster.ts';
import type { Random } from './random.ts';

export interface ChaosCluster {
  /** host:port,… for A2A_REDIS_CLUSTER_NODES. */
  readonly seeds: string;
  /** SIGKILLs a master whose replica is in sync, waits for the failover; how long it took. */
  killMaster(random: Random): Promise<{ port: number; failoverMs: number }>;
  /** Brings the killed node back as a new node and waits until it is a replica in sync and the cluster is whole. */
  restartKilled(): Promise<void>;
  stop(): Promise<void>;
}

/** cluster-node-timeout: how long a master may be silent before its replica takes over. */
const NODE_TIMEOUT_MS = 2_000;
/** Bound on each wait: a failover, and each step of a rejoin (a full sync included). */
const STEP_BOUND_MS = 30_000;
const SLOTS = 16_384;

type SlotRange = [number, number];

async function attempt<T>(port: number, run: (redis: Redis) => Promise<T>, password?: string): Promise<T | Error> {
  const redis = new Redis({ host: '127.0.0.1', port, password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await run(redis);
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  } finally {
    redis.disconnect();
  }
}

async function ask<T>(port: number, run: (redis: Redis) => Promise<T>, password?: string): Promise<T | undefined> {
  const answer = await attempt(port, run, password);
  return answer instanceof Error ? undefined : answer;
}

const infoOf = (port: number, section: string, password?: string): Promise<string> => ask(port, (redis) => redis.info(section), password).then((info) => info ?? '');
const clusterInfoOf = (port: number): Promise<string> => ask(port, async (redis) => String(await redis.cluster('INFO'))).then((info) => info ?? '');
const nodesTable = async (redis: Redis): Promise<string> => String(await redis.cluster('NODES'));

async function waitUntil(what: string, check: () => Promise<boolean>, state: () => string = () => ''): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > STEP_BOUND_MS) throw new Error(`Redis Cluster: ${what} not reached within ${STEP_BOUND_MS} ms ${state()}`.trim());
    await sleep(100);
  }
  return Date.now() - started;
}

/** One line of CLUSTER NODES. */
interface NodeEntry {
  id: string;
  port: number;
  flags: string[];
  /** The id of the master it replicates; '-' for a master. */
  masterId: string;
  slots: SlotRange[];
}

function parseNodes(table: string): NodeEntry[] {
  return table
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      const fields = line.split(' ');
      return {
        id: fields[0] ?? '',
        port: Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1] ?? 0),
        flags: (fields[2] ?? '').split(','),
        masterId: fields[3] ?? '-',
        // "[slot->-id]" entries are slots being migrated, not served.
        slots: fields
          .slice(8)
          .filter((field) => !field.startsWith('['))
          .map((field): SlotRange => {
            const [start = NaN, end = start] = field.split('-').map(Number);
            return [start, end];
          }),
      };
    });
}

const isServingMaster = (entry: NodeEntry): boolean =>
  entry.flags.includes('master') && !entry.flags.includes('fail') && !entry.flags.includes('fail?') && entry.slots.length > 0;

function slotSet(ranges: readonly SlotRange[]): Uint8Array {
  const set = new Uint8Array(SLOTS);
  for (const [start, end] of ranges) set.fill(1, start, end + 1);
  return set;
}

/** Whether `ranges` include every slot of `wanted`. */
function covers(ranges: readonly SlotRange[], wanted: readonly SlotRange[]): boolean {
  const have = slotSet(ranges);
  return wanted.every(([start, end]) => have.subarray(start, end + 1).every((bit) => bit === 1));
}

/** Whether the masters a table lists as up serve every slot between them. */
const allSlotsServed = (entries: readonly NodeEntry[]): boolean => covers(entries.filter(isServingMaster).flatMap((entry) => entry.slots), [[0, SLOTS - 1]]);

const formatSlots = (ranges: readonly SlotRange[]): string => ranges.map(([start, end]) => (start === end ? `${start}` : `${start}-${end}`)).join(',');

/** Every running node says cluster_state:ok, and none of them still counts `killedId` as a serving master. */
async function clusterServes(nodes: readonly ClusterNode[], killedId: string): Promise<boolean> {
  const running = nodes.filter((node) => node.running);
  const answers = await Promise.all(
    running.map(async (node) => {
      if (!/cluster_state:ok/.test(await clusterInfoOf(node.port))) return false;
      const entry = parseNodes((await ask(node.port, nodesTable)) ?? '').find((each) => each.id === killedId);
      // FAIL, not PFAIL ("fail?"): the cluster agreed the node is down, and its replica took its slots.
      return entry !== undefined && entry.flags.includes('fail') && entry.slots.length === 0;
    }),
  );
  return answers.every(Boolean);
}

/** Every running node says cluster_state:ok and knows exactly `expected` nodes (no stale or half-met entry). */
async function clusterWhole(nodes: readonly ClusterNode[], expected: number): Promise<{ ok: boolean; state: string }> {
  const infos = await Promise.all(nodes.filter((node) => node.running).map(async (node) => ({ port: node.port, info: await clusterInfoOf(node.port) })));
  const bad = infos.filter(({ info }) => !/cluster_state:ok/.test(info) || !new RegExp(`cluster_known_nodes:${expected}\\b`).test(info));
  const summary = (info: string): string => `${/cluster_state:\w+/.exec(info)?.[0] ?? 'no answer'} ${/cluster_known_nodes:\d+/.exec(info)?.[0] ?? ''}`.trim();
  return { ok: infos.length === expected && bad.length === 0, state: bad.map(({ port, info }) => `port ${port}: ${summary(info)}`).join('; ') };
}

/** A master that serves slots and has a replica online: killing it tests a failover, not a lost shard. */
interface Victim {
  node: ClusterNode;
  id: string;
  slots: SlotRange[];
}

async function mastersWithReplica(nodes: readonly ClusterNode[]): Promise<Victim[]> {
  const found: Victim[] = [];
  for (const node of nodes.filter((each) => each.running)) {
    const info = await infoOf(node.port, 'replication');
    if (!/role:master/.test(info) || !/slave\d+:[^\n]*state=online/.test(info)) continue;
    const myself = parseNodes((await ask(node.port, nodesTable)) ?? '').find((entry) => entry.flags.includes('myself'));
    if (myself !== undefined && myself.slots.length > 0) found.push({ node, id: myself.id, slots: myself.slots });
  }
  return found;
}

/**
 * Brings a killed master back as a new node: its old id forgotten everywhere (CLUSTER FORGET bans
 * it from gossip for 60 s, and once no node lists it nothing can bring it back), started with
 * no nodes.conf and no data, met, told to replicate whichever master serves its former slots
 * now (read from CLUSTER NODES: the promoted replica), and waited for until it is in sync and
 * every node agrees the cluster is ok. Until it is a replica it asks clients for a password:
 * a client that reads its still-empty CLUSTER SLOTS would drop every node it knows.
 */
async function rejoinAfresh(cluster: OwnRedisCluster, killed: Victim): Promise<void> {
  const { node, id: oldId } = killed;
  const name = `killed master on port ${node.port} (was ${oldId})`;
  const peers = cluster.nodes.filter((each) => each !== node && each.running);
  if (peers.length === 0) throw new Error(`Redis Cluster: no running node left to rejoin the ${name} to`);
  let state = '';
  const lastState = (): string => `(${state})`;

  await waitUntil(
    `${name}: forgotten by every running node`,
    async () => {
      const answers = await Promise.all(
        peers.map(async (peer) => {
          const forget = await attempt(peer.port, (redis) => redis.cluster('FORGET', oldId));
          const table = await ask(peer.port, nodesTable);
          return { peer, forget, forgotten: table !== undefined && !table.includes(oldId) };
        }),
      );
      state = answers
        .filter(({ forgotten }) => !forgotten)
        .map(({ peer, forget }) => `port ${peer.port} still lists it${forget instanceof Error ? `: ${forget.message}` : ''}`)
        .join('; ');
      return answers.every(({ forgotten }) => forgotten);
    },
    lastState,
  );

  const secret = randomBytes(16).toString('hex');
  await node.restartAfresh(['--requirepass', secret]);
  const newId = await attempt(node.port, async (redis) => String(await redis.cluster('MYID')), secret);
  if (newId instanceof Error) throw new Error(`Redis Cluster: ${name} started afresh but did not say its id: ${newId.message}`);
  const named = `${name}, now ${newId}`;

  let metAt = 0;
  let meets = 0;
  await waitUntil(
    `${named}: met, knowing every node and slot, and known to every node`,
    async () => {
      // MEET again now and then: a handshake can time out on a loaded machine.
      if (Date.now() - metAt > 5_000) {
        const seed = peers[meets % peers.length] as ClusterNode;
        meets += 1;
        metAt = Date.now();
        const met = await attempt(node.port, (redis) => redis.cluster('MEET', '127.0.0.1', String(seed.port)), secret);
        if (met instanceof Error) state = `CLUSTER MEET 127.0.0.1 ${seed.port}: ${met.message}`;
      }
      const own = parseNodes((await ask(node.port, nodesTable, secret)) ?? '');
      const views = await Promise.all(peers.map(async (peer) => ({ peer, entries: parseNodes((await ask(peer.port, nodesTable)) ?? '') })));
      const unaware = views.filter(({ entries }) => !entries.some((entry) => entry.id === newId && !entry.flags.includes('handshake')));
      const knowsAll = own.length === peers.length + 1 && own.every((entry) => !entry.flags.includes('handshake') && !entry.flags.includes('noaddr'));
      state = `it lists ${own.length} nodes${allSlotsServed(own) ? '' : ', not every slot served'}; unaware: ${unaware.map(({ peer }) => peer.port).join(',') || 'none'}`;
      return knowsAll && allSlotsServed(own) && unaware.length === 0;
    },
    lastState,
  );

  let target: NodeEntry | undefined;
  await waitUntil(
    `${named}: a master serving its former slots ${formatSlots(killed.slots)}`,
    async () => {
      const own = parseNodes((await ask(node.port, nodesTable, secret)) ?? '');
      target = own.find((entry) => isServingMaster(entry) && covers(entry.slots, killed.slots));
      state = own.filter(isServingMaster).map((entry) => `${entry.id} on port ${entry.port}: ${formatSlots(entry.slots)}`).join('; ');
      return target !== undefined && /role:master/.test(await infoOf(target.port, 'replication'));
    },
    lastState,
  );
  const master = target as NodeEntry;

  let replicatedAt = 0;
  await waitUntil(
    `${named}: a replica in sync of ${master.id} on port ${master.port}`,
    async () => {
      const info = await infoOf(node.port, 'replication', secret);
      if (/role:slave/.test(info)) {
        state = info.replace(/\r/g, '').split('\n').filter((line) => /^(master_port|master_link_status|master_sync_in_progress):/.test(line)).join(' ');
        return new RegExp(`master_port:${master.port}\\b`).test(info) && /master_link_status:up/.test(info) && /master_sync_in_progress:0/.test(info);
      }
      if (Date.now() - replicatedAt > 5_000) {
        replicatedAt = Date.now();
        const replicated = await attempt(node.port, (redis) => redis.cluster('REPLICATE', master.id), secret);
        state = replicated instanceof Error ? `CLUSTER REPLICATE: ${replicated.message}` : 'told to replicate';
      }
      return false;
    },
    lastState,
  );

  const opened = await attempt(node.port, (redis) => redis.config('SET', 'requirepass', ''), secret);
  if (opened instanceof Error) throw new Error(`Redis Cluster: ${named}: could not clear its join password: ${opened.message}`);

  // Gossip brings its new role to the others a moment later; until then a node that still
  // lists it as a master without replicas is a view the next master kill must not be picked by.
  await waitUntil(
    `${named}: every node at cluster_state:ok, knowing ${cluster.nodes.length} nodes, and listing it as the replica of ${master.id}`,
    async () => {
      const whole = await clusterWhole(cluster.nodes, cluster.nodes.length);
      const views = await Promise.all(peers.map(async (peer) => ({ peer, entries: parseNodes((await ask(peer.port, nodesTable)) ?? '') })));
      const stale = views.filter(({ entries }) => !entries.some((entry) => entry.id === newId && entry.flags.includes('slave') && entry.masterId === master.id));
      state = [whole.state, stale.length === 0 ? '' : `not yet listed as a replica by port ${stale.map(({ peer }) => peer.port).join(',')}`].filter(Boolean).join('; ');
      return whole.ok && stale.length === 0;
    },
    lastState,
  );
}

export async function startChaosCluster(): Promise<ChaosCluster> {
  // A master holds a full sync back repl-diskless-sync-delay (5 s) for more replicas to join it;
  // with one replica a shard that lost its own would just stay without one (and WAIT 1 refuse
  // its acceptances) that much longer after each master kill.
  const cluster: OwnRedisCluster = await startRedisCluster({ nodeTimeoutMs: NODE_TIMEOUT_MS, args: ['--repl-diskless-sync-delay', '0'] });
  const killed: Victim[] = [];
  return {
    seeds: cluster.seeds,
    async killMaster(random) {
      let masters: Victim[] = [];
      await waitUntil('a master with an online replica', async () => (masters = await mastersWithReplica(cluster.nodes)).length > 0);
      const victim = random.pick(masters);
      await victim.node.kill();
      killed.push(victim);
      const failoverMs = await waitUntil(`failover of the master on port ${victim.node.port} (${victim.id})`, () => clusterServes(cluster.nodes, victim.id));
      return { port: victim.node.port, failoverMs };
    },
    async restartKilled() {
      for (let entry = killed.shift(); entry !== undefined; entry = killed.shift()) await rejoinAfresh(cluster, entry);
    },
    stop: () => cluster.stop(),
  };
}
