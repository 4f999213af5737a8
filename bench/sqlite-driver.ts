// The SQLite anchor's driver, better-sqlite3, is installed the first time the anchor runs rather
// than as a devDependency: it compiles a native addon when installed (about three minutes on
// these 2 cores, where no prebuilt binary is fetched), which every `npm ci` (a new user's,
// CI's) would otherwise pay for a benchmark few of them run. It goes into a folder of its own
// under node_modules, one per Node ABI: an addon built for one Node does not load in another, and
// the bench runs on the machine's Node or on a newer one (`npx -p node@24 npm run bench`, the
// Node the image ships on). package.json and package-lock.json stay as they are; the next
// `npm ci` removes it again.

import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
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
function installed(driver: string): boolean {
  return existsSync(join(driver, 'package.json')) && existsSync(join(driver, 'build', 'Release', 'better_sqlite3.node'));
}

/**
 * Installs better-sqlite3 for this process's Node (once per Node ABI and npm ci) and returns the
 * folder of the package, which the SDK server, a child on the same Node, loads by path
 * (BENCH_SQLITE_DRIVER, bench/sdk-store.ts).
 */
export async function ensureSqliteDriver(repoRoot: string, log: (msg: string) => void): Promise<string> {
  const prefix = join(repoRoot, 'node_modules', '.bench-sqlite', `node-abi-${process.versions.modules}`);
  const driver = join(prefix, 'node_modules', 'better-sqlite3');
  if (installed(driver)) return driver;
  log(`installing better-sqlite3@${BETTER_SQLITE3_VERSION} for the SQLite anchor on Node ${process.version} (once per npm ci; it builds a native addon, a few minutes)`);
  mkdirSync(prefix, { recursive: true });
  const args = ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `better-sqlite3@${BETTER_SQLITE3_VERSION}`];
  await run('npm', args, { cwd: prefix, timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024 });
  if (!installed(driver)) throw new Error(`better-sqlite3@${BETTER_SQLITE3_VERSION} did not install into ${prefix}; run npm ${args.join(' ')} and look at its output`);
  return driver;
}

/** The better-sqlite3 of `driver` (ensureSqliteDriver's folder), loaded by path. */
export function loadSqliteDriver(driver: string): typeof import('better-sqlite3') {
  const Database = createRequire(import.meta.url)(driver) as typeof import('better-sqlite3');
  try {
    // The addon itself is loaded by the first database opened.
    new Database(':memory:').close();
    return Database;
  } catch (error) {
    // node-gyp builds against the headers npm's `nodedir` names (a distribution's npm may name its
    // own Node's), whichever Node runs it: under another Node the addon does not load.
    if ((error as { code?: string }).code !== 'ERR_DLOPEN_FAILED') throw error;
    throw new Error(
      `better-sqlite3 in ${driver} was built for another Node than ${process.version} (NODE_MODULE_VERSION ${process.versions.modules}): ` +
        `npm built it against the headers its nodedir setting names; set npm_config_nodedir to this Node's headers and remove that folder, or run the SQLite anchor on the machine's own Node`,
      { cause: error },
    );
  }
}
