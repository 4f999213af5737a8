import { configDefaults, defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.ts';

/**
 * The suites that need a module graph of their own, so each runs in a fresh process: they
 * start OpenTelemetry's process-wide tracer provider and read what it recorded, or replace a
 * dependency with vi.mock (which a module already loaded by an earlier suite would escape).
 */
export const OWN_MODULE_SUITES = [
  'test/failure-logs.test.ts',
  'test/log-correlation.test.ts',
  'test/mcp-tracing.test.ts',
  'test/otlp-protobuf.test.ts',
  'test/trace-context.test.ts',
  'test/tracing.test.ts',
  'test/verified-tokens.test.ts',
];

/**
 * Every other suite shares its worker's loaded modules with the suites that ran there before
 * (isolate: false). Loading the gateway's few hundred modules through vite's module runner took
 * about 2 s of CPU per suite, a third of a full run's time on these 2 cores (13 minutes isolated,
 * 9 with these projects). Safe because the suites already keep to themselves: each its own key prefix and its own
 * gateways, metrics read as differences, no configuration read from the environment at import.
 */
export const SHARED_MODULES = { isolate: false } as const;

export default defineConfig({
  test: {
    // Each project names its files (below): an include here would be added to theirs, not replaced.
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
    projects: [
      { extends: true, test: { name: 'shared', ...SHARED_MODULES, include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...OWN_MODULE_SUITES] } },
      { extends: true, test: { name: 'own-modules', include: OWN_MODULE_SUITES } },
    ],
  },
});
