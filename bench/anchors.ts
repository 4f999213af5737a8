// The durable anchors: the SDK echo server on the SDK's own DatabaseTaskStore, on PostgreSQL and
// on SQLite. Each gets a database of its own for the run (a fresh PostgreSQL database, a SQLite
// file in a temp dir), migrated with the SDK's `a2a-db upgrade` as an operator would (on SQLite,
// its offline SQL applied through the driver built for this Node: the CLI would look for a
// driver of its own), and removed afterwards. An anchor that cannot be set up is skipped with one line; the bench goes on.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { startSdkServer } from './gateway-process.ts';
import type { BenchServer } from './bench-server.ts';
import { PG_APPLICATION_NAME } from './sdk-store.ts';
import { ensureSqliteDriver, loadSqliteDriver } from './sqlite-driver.ts';

export const ANCHORS = ['postgres', 'sqlite'] as const;
export type Anchor = (typeof ANCHORS)[number];
export const ANCHOR_SERVER = { postgres: 'sdk-pg', sqlite: 'sdk-sqlite' } as const;

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

interface AnchorOptions {
  repoRoot: string;
  logDir: string;
  /** BENCH_PG_URL: a role that may create databases; the anchor's own database is made beside it. */
  pgUrl: string;
  log: (msg: string) => void;
}

const run = promisify(execFile);

/** `a2a-db upgrade` for the task store only: the tables DatabaseTaskStore expects. */
async function migrate(repoRoot: string, url: string): Promise<void> {
  await run(join(repoRoot, 'node_modules', '.bin', 'a2a-db'), ['upgrade', '--url', url, '--store', 'tasks'], { cwd: repoRoot, timeout: 60_000 });
}

/** The same migration as SQL (`a2a-db upgrade --sql`), run on the SQLite file with `driver`. */
async function migrateSqlite(repoRoot: string, driver: string, file: string): Promise<void> {
  const { stdout } = await run(join(repoRoot, 'node_modules', '.bin', 'a2a-db'), ['upgrade', '--sql', '--dialect', 'sqlite', '--store', 'tasks'], { cwd: repoRoot, timeout: 60_000 });
  const Database = loadSqliteDriver(driver);
  const db = new Database(file);
  try {
    db.exec(stdout);
  } finally {
    db.close();
  }
}

/** The URL without its password, for log lines. */
export function redactUrl(url: string): string {
  const u = new URL(url);
  if (u.password !== '') u.password = '***';
  return u.toString();
}

export async function startAnchor(anchor: Anchor, opts: AnchorOptions): Promise<BenchServer | undefined> {
  try {
    return anchor === 'postgres' ? await startPostgres(opts) : await startSqlite(opts);
  } catch (err) {
    opts.log(`skipping the ${anchor} anchor: ${(err as Error).message.split('\n')[0]}`);
    return undefined;
  }
}

async function startPostgres(opts: AnchorOptions): Promise<BenchServer> {
  const admin = new pg.Client({ connectionString: opts.pgUrl, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (err) {
    await admin.end().catch(() => undefined);
    throw new Error(`PostgreSQL at ${redactUrl(opts.pgUrl)} is not reachable (${(err as Error).message}); set BENCH_PG_URL`);
  }
  const database = `a2a_bench_${randomBytes(4).toString('hex')}`;
  const dropDatabase = async (): Promise<void> => {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch((err: unknown) => opts.log(`dropping ${database} failed: ${(err as Error).message}`));
    await admin.end().catch(() => undefined);
  };
  try {
    await admin.query(`CREATE DATABASE ${database}`);
    const url = new URL(opts.pgUrl);
    url.pathname = `/${database}`;
    await migrate(opts.repoRoot, url.toString());
    const server = await startSdkServer({
      repoRoot: opts.repoRoot,
      logDir: opts.logDir,
      name: 'sdk-pg',
      env: { BENCH_SDK_STORE: 'postgres', BENCH_SDK_DB_URL: url.toString() },
    });
    opts.log(`sdk-pg: database ${database} on ${redactUrl(opts.pgUrl)}`);
    return {
      ...server,
      // The pool's backends, and the cluster's WAL writer, checkpointer and background writer:
      // their work is this server's commits (nothing else should be writing during a round).
      dbPids: async () =>
        (
          await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE (datname = $1 AND application_name = $2) OR backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
            [database, PG_APPLICATION_NAME],
          )
        ).rows.map((r) => r.pid),
      async stop() {
        await server.stop();
        await dropDatabase();
      },
    };
  } catch (err) {
    await dropDatabase();
    throw err;
  }
}

async function startSqlite(opts: AnchorOptions): Promise<BenchServer> {
  const driver = await ensureSqliteDriver(opts.repoRoot, opts.log);
  const dir = mkdtempSync(join(tmpdir(), 'a2a-bench-sqlite-'));
  const file = join(dir, 'tasks.db');
  try {
    await migrateSqlite(opts.repoRoot, driver, file);
    const server = await startSdkServer({ repoRoot: opts.repoRoot, logDir: opts.logDir, name: 'sdk-sqlite', env: { BENCH_SDK_STORE: 'sqlite', BENCH_SDK_SQLITE_FILE: file, BENCH_SQLITE_DRIVER: driver } });
    return {
      ...server,
      async stop() {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

export function parseAnchors(raw: string | undefined): Anchor[] {
  if (raw === undefined) return [...ANCHORS];
  const picked = raw.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '' && s !== 'none');
  for (const a of picked) if (!(ANCHORS as readonly string[]).includes(a)) throw new Error(`BENCH_ANCHORS: unknown anchor "${a}"; expected some of ${ANCHORS.join(', ')} (or none)`);
  return ANCHORS.filter((a) => picked.includes(a));
}
