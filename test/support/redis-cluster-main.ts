// `node --import tsx test/support/redis-cluster-main.ts`: starts a 3-master, 3-replica Redis
// Cluster on free loopback ports, prints its seeds (the value for A2A_REDIS_CLUSTER_NODES) on
// stdout, and runs until SIGINT or SIGTERM, then stops the six nodes and removes their data.
import { startRedisCluster } from './redis-cluster.ts';

const cluster = await startRedisCluster();
process.stdout.write(`${cluster.seeds}\n`);
process.stderr.write(`Redis Cluster up: pids ${cluster.nodes.map((node) => node.pid).join(' ')}; stop with SIGTERM\n`);
const stop = (): void => {
  void cluster.stop().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
setInterval(() => undefined, 60_000);
