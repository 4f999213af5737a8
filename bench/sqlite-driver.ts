// The SQLite anchor's driver, better-sqlite3, is installed the first time the anchor runs rather
// than as a devDependency: it compiles a native addon when installed (about three minutes on
// these 2 cores, where no prebuilt binary is fetched), which every `npm ci` (a new user's,
// CI's) would otherwise pay for a benchmark few of them run. `--no-save` leaves package.json and
// package-lock.json as they are; the next `npm ci` removes it again.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** 13.x needs Node 22 and crashes on Node 20; 12.11.1 works on 20, 24 and 26. */
export const BETTER_SQLITE3_VERSION = '12.11.1';

const run = promisify(execFile);

/**
 * Whether the driver and its built addon are there. Looked up on disk, not with require.resolve:
 * a lookup that failed once is remembered by this process's module loader, so it would still
 * fail right after the install (the SDK server, a child process, imports it fresh).
 */
function installed(repoRoot: string): boolean {
  const root = join(repoRoot, 'node_modules', 'better-sqlite3');
  return existsSync(join(root, 'package.json')) && existsSync(join(root, 'build', 'Release', 'better_sqlite3.node'));
}

/** Makes better-sqlite3 importable from the repository, installing it (once) when it is not. */
export async function ensureSqliteDriver(repoRoot: string, log: (msg: string) => void): Promise<void> {
  if (installed(repoRoot)) return;
  log(`installing better-sqlite3@${BETTER_SQLITE3_VERSION} for the SQLite anchor (once per npm ci; it builds a native addon, a few minutes)`);
  await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', `better-sqlite3@${BETTER_SQLITE3_VERSION}`], { cwd: repoRoot, timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024 });
  if (!installed(repoRoot)) throw new Error(`better-sqlite3@${BETTER_SQLITE3_VERSION} did not install; run npm install --no-save better-sqlite3@${BETTER_SQLITE3_VERSION} and look at its output`);
}
