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
//
// A file's JavaScript depends only on its text, its path, the compiler's version and the options
// below, so each output is also kept under a hash of exactly those (transpiled/ beside the runs):
// the next run (CI runs the suite four times from one checkout; a developer reruns after editing
// one file) copies every unchanged file's output instead of transpiling all 400 or so again, a few
// CPU-seconds a run. An edited file hashes differently, so it is transpiled afresh, never served stale.
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type ts from 'typescript';

const require = createRequire(import.meta.url);
let compiler: typeof ts | undefined;
/**
 * The compiler, loaded at its first use: nearly every suite imports this module (for
 * nodeEntryArgs) and never transpiles, and loading typescript costs each suite's process about a
 * third of a CPU-second.
 */
const typescript = (): typeof ts => (compiler ??= require('typescript') as typeof ts);

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Folders whose modules spawned processes load (the CLI, its adapters, the test fixtures). */
const SOURCE_ROOTS = ['src', 'adapters', 'queues', 'agent-card', 'test/fixtures'];

/** Where a run's build lives, so processes of that run (and only they) start from it. */
export const COMPILED_SOURCES_ENV = 'A2A_TEST_COMPILED_SOURCES';

/** The compiler options, by name (so they key the cache without loading the compiler). */
const OPTIONS = {
  target: 'ES2022',
  module: 'ESNext',
  // `./x.ts` imports become `./x.js`, also in dynamic import() of a computed path.
  rewriteRelativeImportExtensions: true,
  sourceMap: false,
} as const;

const compilerOptions = (compiler: typeof ts): ts.CompilerOptions => ({
  ...OPTIONS,
  target: compiler.ScriptTarget[OPTIONS.target],
  module: compiler.ModuleKind[OPTIONS.module],
});

/** What an output depends on besides its file: the compiler's version and the options. */
const COMPILER_KEY = `${(require('typescript/package.json') as { version: string }).version}\0${JSON.stringify(OPTIONS)}`;

/** Transpiled outputs by hash of what determines them, shared by the runs of this checkout. */
const TRANSPILED_CACHE = join(ROOT, 'node_modules', '.cache', 'a2a-test-js', 'transpiled');

/** The JavaScript of one TypeScript file: from the cache when this text was transpiled before. */
function transpileFile(source: string, used: Set<string>): string {
  const text = readFileSync(source, 'utf8');
  const fileName = relative(ROOT, source);
  const key = createHash('sha256').update(`${COMPILER_KEY}\0${fileName}\0`).update(text).digest('hex');
  const cached = join(TRANSPILED_CACHE, `${key}.js`);
  used.add(`${key}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    // Not there (or pruned by a concurrent run of an older checkout state): transpile it.
  }
  const compiler = typescript();
  const { outputText } = compiler.transpileModule(text, { fileName, compilerOptions: compilerOptions(compiler), reportDiagnostics: false });
  // Written aside and renamed, so a concurrent run never reads half a file. Best effort: a file
  // that could not be kept is transpiled again next time.
  const partial = `${cached}.${process.pid}.tmp`;
  try {
    writeFileSync(partial, outputText);
    renameSync(partial, cached);
  } catch {
    rmSync(partial, { force: true });
  }
  return outputText;
}

function transpileTree(sourceDir: string, outDir: string, used: Set<string>): number {
  let files = 0;
  mkdirSync(outDir, { recursive: true });
  for (const entry of readdirSync(sourceDir, { withFileTypes: true })) {
    const source = join(sourceDir, entry.name);
    if (entry.isDirectory()) {
      files += transpileTree(source, join(outDir, entry.name), used);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      writeFileSync(join(outDir, `${entry.name.slice(0, -3)}.js`), transpileFile(source, used));
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
  mkdirSync(TRANSPILED_CACHE, { recursive: true });
  const used = new Set<string>();
  let files = 0;
  for (const root of SOURCE_ROOTS) files += transpileTree(join(ROOT, root), join(dir, root), used);
  // The cache keeps this build's outputs only, so edits do not pile up old versions.
  for (const name of readdirSync(TRANSPILED_CACHE)) {
    if (used.has(name) || name.endsWith('.tmp')) continue;
    try {
      unlinkSync(join(TRANSPILED_CACHE, name));
    } catch {
      // Removed by a concurrent run already.
    }
  }
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
