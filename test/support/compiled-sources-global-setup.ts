// Vitest global setup: transpiles the repository once at the start of the run (and again before
// every watch-mode rerun, so an edited source is never served stale) for the processes the suites
// spawn (compiled-sources.ts), and removes the build when the run ends.
import type { TestProject } from 'vitest/node';
import { buildCompiledSources, COMPILED_SOURCES_ENV, removeCompiledSources } from './compiled-sources.ts';

let current: string | undefined;

function rebuild(): void {
  const previous = current;
  current = buildCompiledSources().dir;
  process.env[COMPILED_SOURCES_ENV] = current;
  if (previous !== undefined) removeCompiledSources(previous);
}

export function setup(project: TestProject): void {
  rebuild();
  project.onTestsRerun(rebuild);
}

export function teardown(): void {
  if (current !== undefined) removeCompiledSources(current);
  current = undefined;
}
