// Vitest's order of test files, with one change for a run that has no durations recorded yet (a
// fresh clone, so every CI run's first suite): the files known to take longest start first.
//
// Vitest runs the files it has durations for longest first, and the others largest first. Size is
// a poor guess for the suites that mostly wait on processes: test/rolling-restart.test.ts is the
// smallest file and among the slowest, so a cold run started it last and one of the two workers
// sat idle for most of its half minute. Once a run has recorded durations (the cluster suites and
// the LTS halves in .ci/run, any rerun on a checkout) vitest's own order applies unchanged.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The slowest suites of a CI run, slowest first (measured; a missing or renamed one is ignored). */
const SLOW_SUITES = [
  'test/remote-a2a-recovery.test.ts',
  'test/package.test.ts',
  'test/shutdown.test.ts',
  'test/rolling-restart.test.ts',
  'test/schedules.test.ts',
  'test/control-propagation-cluster.test.ts',
];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    // The key vitest records a file's results under.
    const recorded = (spec: TestSpecification): boolean => this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(root, spec.moduleId)}`) !== undefined;
    const path = (spec: TestSpecification): string => relative(root, spec.moduleId).split('\\').join('/');
    const rank = (spec: TestSpecification): number => (recorded(spec) ? -1 : SLOW_SUITES.indexOf(path(spec)));
    const first = sorted.filter((spec) => rank(spec) >= 0).sort((a, b) => rank(a) - rank(b));
    return [...first, ...sorted.filter((spec) => rank(spec) < 0)];
  }
}
