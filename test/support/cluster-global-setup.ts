// Vitest global setup of `npm run test:cluster`: starts a 3-master, 3-replica Redis Cluster of the
// run's own (unless A2A_TEST_REDIS_CLUSTER_NODES names one already running) and hands its seeds
// to every test file and worker process through the environment; stops it at the end.
import { startRedisCluster, type OwnRedisCluster } from './redis-cluster.ts';

let cluster: OwnRedisCluster | undefined;

export async function setup(): Promise<void> {
  if ((process.env.A2A_TEST_REDIS_CLUSTER_NODES ?? '') !== '') return;
  cluster = await startRedisCluster();
  process.env.A2A_TEST_REDIS_CLUSTER_NODES = cluster.seeds;
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
