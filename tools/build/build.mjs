#!/usr/bin/env node
// `npm run build`: compiles what the package ships (src, adapters, agent-card, queues) to dist/
// with tsc (tsconfig.build.json: JavaScript, .d.ts types, source maps) and copies the files the
// modules read at run time beside them (Lua scripts, console assets). Plain JavaScript, so it runs
// before anything is built and without tsx.
//
// `--if-stale` builds only when dist/ is missing or a source, tsconfig or package.json changed
// since the last build: `npm start` and the other run scripts call it first, so an edited checkout
// never runs old code and an unchanged one starts at once. Messages go to stderr (stdout stays the
// command's own, e.g. a minted token).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DIST = join(ROOT, 'dist');
/** Written last, so its time says when a complete build ended. */
const STAMP = join(DIST, '.build-stamp');
const SOURCE_ROOTS = ['src', 'adapters', 'agent-card', 'queues'];
const INPUT_FILES = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];

/** Every file under the source roots, relative to the repository. */
function sourceFiles(dir = '') {
  const files = [];
  const roots = dir === '' ? SOURCE_ROOTS : [dir];
  for (const root of roots) {
    const absolute = join(ROOT, root);
    if (!existsSync(absolute)) continue;
    for (const entry of readdirSync(absolute, { withFileTypes: true })) {
      const path = join(root, entry.name);
      if (entry.isDirectory()) files.push(...sourceFiles(path));
      else files.push(path);
    }
  }
  return files;
}

function isStale() {
  if (!existsSync(STAMP)) return true;
  const built = statSync(STAMP).mtimeMs;
  return [...INPUT_FILES, ...sourceFiles()].some((file) => existsSync(join(ROOT, file)) && statSync(join(ROOT, file)).mtimeMs > built);
}

function fail(message) {
  process.stderr.write(`a2a-gateway build: ${message}\n`);
  // exit skips withLock's finally: the next build must not wait for a lock nobody holds.
  if (holdingLock) rmSync(LOCK, { recursive: true, force: true });
  process.exit(1);
}

function build() {
  let tsc;
  try {
    tsc = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    fail('TypeScript is not installed, so dist/ cannot be built. It is a dev dependency: run `npm ci` (without --omit=dev), then `npm run build`.');
  }
  const started = Date.now();
  // From scratch: outputs of deleted or renamed sources must not linger in what ships.
  rmSync(DIST, { recursive: true, force: true });
  const compiled = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (compiled.status !== 0) fail(`tsc -p tsconfig.build.json failed (exit ${compiled.status ?? compiled.signal}); dist/ is incomplete.`);
  let assets = 0;
  for (const file of sourceFiles()) {
    if (/\.(ts|mts|cts)$/.test(file)) continue;
    mkdirSync(dirname(join(DIST, file)), { recursive: true });
    cpSync(join(ROOT, file), join(DIST, file));
    assets += 1;
  }
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  process.stderr.write(`a2a-gateway build: ${relative(process.cwd(), DIST) || 'dist'} built in ${((Date.now() - started) / 1000).toFixed(1)} s (${assets} asset files copied)\n`);
}

/**
 * One build at a time: two test files (or two npm starts) finding dist/ stale at once would
 * otherwise empty it under each other. The lock is a directory (created atomically); one older
 * than LOCK_STALE_MS is a crashed build's and is taken over.
 */
const LOCK = join(ROOT, '.dist-build.lock');
const LOCK_STALE_MS = 300_000;
let holdingLock = false;

function withLock(action) {
  for (;;) {
    try {
      mkdirSync(LOCK);
      holdingLock = true;
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      let age = 0;
      try {
        age = Date.now() - statSync(LOCK).mtimeMs;
      } catch {
        continue;
      }
      if (age > LOCK_STALE_MS) rmSync(LOCK, { recursive: true, force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    action();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
    holdingLock = false;
  }
}

const onlyIfStale = process.argv.includes('--if-stale');
// An installed package ships dist/ without the sources: nothing to build from, nothing to check.
if (onlyIfStale && !existsSync(join(ROOT, 'src'))) process.exit(0);
// Checked again inside the lock: a build that held it may have just made dist/ current.
if (!onlyIfStale || isStale()) withLock(() => (!onlyIfStale || isStale()) && build());
