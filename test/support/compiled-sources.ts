// The repository's TypeScript, transpiled to plain JavaScript once per test run, for the worker,
// gateway and fixture processes the suites spawn. Started through `--import tsx`, each of those
// processes paid about 1.1 CPU-s more to become ready than the same code as .js (tsx's loader
// thread sits between every module and the engine); a suite run starts ninety or so.
//
// The output mirrors the repository's layout (src/cli/main.ts → <dir>/src/cli/main.js) next to a
// copy of package.json, so what modules read relative to import.meta.url resolves as it does in
// the checkout: every other file of the transpiled folders (Lua scripts, console assets, .mjs
// adapters) is copied, not linked, so a run (an hour of chaos) keeps running the scripts it
// started with while the checkout is edited. Bare imports resolve from the repository's node_modules,
// since the output lives inside it (node_modules/.cache, never committed, emptied by `npm ci`).
//
// Transpiling is per file and does no type check (`npm run typecheck` does), exactly what tsx does:
// the code the processes run is the code the tests import, built at the start of the same run
// from the same checkout, in a folder of its own that the run removes at its end.
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Folders whose modules spawned processes load (the CLI, its adapters, the test fixtures). */
const SOURCE_ROOTS = ['src', 'adapters', 'queues', 'agent-card', 'test/fixtures'];

/** Where a run's build lives, so processes of that run (and only they) start from it. */
export const COMPILED_SOURCES_ENV = 'A2A_TEST_COMPILED_SOURCES';

const COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  // `./x.ts` imports become `./x.js`, also in dynamic import() of a computed path.
  rewriteRelativeImportExtensions: true,
  sourceMap: false,
};

function transpileTree(sourceDir: string, outDir: string): number {
  let files = 0;
  mkdirSync(outDir, { recursive: true });
  for (const entry of readdirSync(sourceDir, { withFileTypes: true })) {
    const source = join(sourceDir, entry.name);
    if (entry.isDirectory()) {
      files += transpileTree(source, join(outDir, entry.name));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), {
        fileName: relative(ROOT, source),
        compilerOptions: COMPILER_OPTIONS,
        reportDiagnostics: false,
      });
      writeFileSync(join(outDir, `${entry.name.slice(0, -3)}.js`), outputText);
      files += 1;
    } else {
      copyFileSync(source, join(outDir, entry.name));
    }
  }
  return files;
}

/** Transpiles SOURCE_ROOTS into a new folder under node_modules/.cache and returns its path. */
export function buildCompiledSources(): { dir: string; files: number } {
  const parent = join(ROOT, 'node_modules', '.cache', 'a2a-test-js');
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, 'run-'));
  // "type": "module" for the .js files, and the version src/version.ts reads.
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  let files = 0;
  for (const root of SOURCE_ROOTS) files += transpileTree(join(ROOT, root), join(dir, root));
  return { dir, files };
}

export function removeCompiledSources(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The node arguments that run a repository TypeScript entry point (a path relative to the root):
 * its transpiled copy when this run built one, else the source through tsx (a test file run by a
 * config without the build's global setup).
 */
export function nodeEntryArgs(entry: string): string[] {
  const dir = process.env[COMPILED_SOURCES_ENV];
  if (dir === undefined || dir === '') return ['--import', 'tsx', join(ROOT, entry)];
  return [join(dir, entry.replace(/\.ts$/, '.js'))];
}
