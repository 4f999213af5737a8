import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Suites talk to real Redis and real child processes on a shared, noisy 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file uses its own key prefix, so files may run in parallel; two at a time keeps
    // the worker processes some suites spawn from starving each other.
    maxWorkers: 2,
    fileParallelism: true,
    // Every script call of the suite (and of the workers it spawns) must name keys of one
    // Cluster hash slot (src/store/script-slots.ts): a cross-slot script fails here, not on a Cluster.
    env: { A2A_CHECK_SCRIPT_SLOTS: '1' },
    // The worker, gateway and fixture processes the suites spawn (ninety or so a run) start from
    // plain JavaScript transpiled at the start of the run, not through tsx: about 1.1 CPU-s less
    // each on this CPU-bound 2-core machine (test/support/compiled-sources.ts says how it stays
    // true to the checkout).
    globalSetup: ['test/support/compiled-sources-global-setup.ts'],
    // Lets a test run the garbage collector where collection changes behaviour: fetch cancels
    // the unread body of a collected Response, closing its stream (test/stream-caps.test.ts).
    execArgv: ['--expose-gc'],
    // Vite's transforms of the sources and suites are kept on disk (node_modules/.experimental-vitest-cache,
    // keyed by each file's content, the config and the lockfile), so a run after the first (CI runs
    // four from one checkout: the suite, the cluster suites, the two LTS halves) does not transform
    // the same files again: about 5 CPU-s less per run.
    experimental: { fsModuleCache: true },
    // A run with no durations recorded yet (CI's first) starts the slowest suites first, not last.
    sequence: { sequencer: SlowFirstSequencer },
  },
});
