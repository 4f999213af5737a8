import { defineConfig } from 'vitest/config';
import base, { SHARED_MODULES } from './vitest.config.ts';

/**
 * `npm run test:cluster`: the protocol, recovery and coordination suites with every gateway and
 * worker on a Redis Cluster (3 masters, 3 replicas, started for the run; docs/redis-cluster.md).
 */
export const CLUSTER_SUITES = [
  'test/redis-cluster.test.ts',
  'test/sdk-interop.test.ts',
  'test/client-scenarios.test.ts',
  'test/stream-replay.test.ts',
  'test/replay-bytes.test.ts',
  'test/cancel.test.ts',
  'test/worker-recovery.test.ts',
  'test/coordination.test.ts',
  'test/coordination-recovery.test.ts',
  'test/blocking-answer.test.ts',
  'test/output-bounds.test.ts',
  'test/crash-attempts.test.ts',
  'test/artifact-writes.test.ts',
  'test/announced-events.test.ts',
  'test/admin-api.test.ts',
  'test/admin-api-store.test.ts',
];

// Not mergeConfig: it would append these files to the base config's include, not replace it.
export default defineConfig({
  test: {
    ...base.test,
    // One project: none of these suites needs a module graph of its own (vitest.config.ts).
    projects: undefined,
    ...SHARED_MODULES,
    include: CLUSTER_SUITES,
    // The base config's build of plain-JS sources for spawned processes, then the cluster.
    globalSetup: ['test/support/compiled-sources-global-setup.ts', 'test/support/cluster-global-setup.ts'],
  },
});
