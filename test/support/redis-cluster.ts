// A real Redis Cluster of a test run's (or CI's) own: six redis-server processes on free loopback
// ports (three masters, three replicas), joined with `redis-cli --cluster create`. Only these
// processes are ever signalled, by their pids; stop() removes their data directories.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, whenRedisReady } from './redis-server.ts';

export interface ClusterNode {
  port: number;
  /** The running process's pid (a restarted node has a new one). */
  readonly pid: number;
  /** SIGKILL this node (a master kill, for failover tests); its peers notice after cluster-node-timeout. */
  kill(): Promise<void>;
  /**
   * Starts a killed node again on its port with its nodes.conf (its old id, epoch and slots): it
   * usually rejoins as a replica of the node promoted in its place. Not always: a master without
   * persistence once came back owning its slots and made the promoted node its (emptied)
   * replica. A master kill's restart under load uses restartAfresh().
   */
  restart(): Promise<void>;
  /**
   * Starts a killed node again as one the cluster has never seen: its nodes.conf and data files
   * are deleted first, so it comes up with a new node id, no slots, no peers and no keys, and
   * joins only when someone sends it CLUSTER MEET. Its old id must be forgotten by the cluster
   * (CLUSTER FORGET) by whoever calls this. `args` are added to its redis-server arguments for
   * this start only (later ones win), e.g. ['--requirepass', secret] to keep clients off it
   * while it joins.
   */
  restartAfresh(args?: string[]): Promise<void>;
  readonly running: boolean;
}

export interface OwnRedisCluster {
  /** `host:port,host:port,…`: what A2A_REDIS_CLUSTER_NODES takes. */
  seeds: string;
  nodes: ClusterNode[];
  stop(): Promise<void>;
}

export interface ClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
  /** How long a node may be unreachable before its replica is promoted (Redis's cluster-node-timeout). */
  nodeTimeoutMs?: number;
  /** Extra redis-server arguments for every node, e.g. ['--appendonly', 'yes']. */
  args?: string[];
}

/** Starts the nodes, creates the cluster and resolves once every node reports cluster_state:ok. */
export async function startRedisCluster(options: ClusterOptions = {}): Promise<OwnRedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 1;
  const dir = mkdtempSync(join(tmpdir(), 'a2a-own-cluster-'));
  const nodes: (ClusterNode & { exited: Promise<void> })[] = [];
  // Should the starting process end without stop() (a killed test run), its nodes go with it.
  const killOnExit = (): void => {
    for (const node of nodes) if (node.running) process.kill(node.pid, 'SIGKILL');
  };
  process.once('exit', killOnExit);
  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    await Promise.all(nodes.map((node) => node.kill()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i += 1) nodes.push(await startNode(await freePort(), dir, options));
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicas), '--cluster-yes']);
    await waitForClusterOk(nodes.map((node) => node.port), masters * (1 + replicas));
    return { seeds: addresses.join(','), nodes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function startNode(port: number, dir: string, options: ClusterOptions): Promise<ClusterNode & { exited: Promise<void> }> {
  const configFile = join(dir, `nodes-${port}.conf`);
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--cluster-enabled', 'yes',
    '--cluster-config-file', configFile,
    '--cluster-node-timeout', String(options.nodeTimeoutMs ?? 2_000),
    '--dir', dir,
    '--dbfilename', `dump-${port}.rdb`,
    '--appendfilename', `appendonly-${port}.aof`,
    '--save', '',
    '--appendonly', 'no',
    ...(options.args ?? []),
  ];
  const launch = async (extra: string[] = []): Promise<{ child: ChildProcess; exited: Promise<void> }> => {
    const child: ChildProcess = spawn('redis-server', [...args, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await whenRedisReady(child, `cluster node on port ${port}`);
    return { child, exited };
  };
  let current = await launch();
  const isRunning = (): boolean => current.child.exitCode === null && current.child.signalCode === null;
  return {
    port,
    get pid() {
      return current.child.pid as number;
    },
    get exited() {
      return current.exited;
    },
    get running() {
      return isRunning();
    },
    async kill() {
      if (isRunning()) {
        current.child.kill('SIGKILL');
        await current.exited;
      }
    },
    async restart() {
      if (isRunning()) return;
      current = await launch();
    },
    async restartAfresh(extra = []) {
      if (isRunning()) throw new Error(`cluster node on port ${port} is running: only a killed node can start afresh`);
      // Only this node's files: the nodes share one directory. An AOF lives in appenddirname.
      rmSync(configFile, { force: true });
      rmSync(join(dir, `dump-${port}.rdb`), { force: true });
      const aofDir = join(dir, 'appendonlydir');
      if (existsSync(aofDir)) {
        for (const file of readdirSync(aofDir)) if (file.startsWith(`appendonly-${port}.aof`)) rmSync(join(aofDir, file), { force: true });
      }
      current = await launch(extra);
    },
  };
}

/** Every node agrees the cluster is ok and knows all its peers (slots assigned, replicas attached). */
async function waitForClusterOk(ports: number[], expectedNodes: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(ports.map((port) => run('redis-cli', ['-p', String(port), 'cluster', 'info']).catch(() => '')));
    const ok = states.every((info) => /cluster_state:ok/.test(info) && new RegExp(`cluster_known_nodes:${expectedNodes}\\b`).test(info));
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`Redis Cluster not ok after ${timeoutMs} ms:\n${states.join('\n---\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited ${String(code)}:\n${out}`))));
  });
}
