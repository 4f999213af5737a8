import { defineConfig } from 'vitest/config';

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
  },
});
