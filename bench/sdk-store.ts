// The task store of the SDK reference server: in memory (the SDK's default), or the SDK's own
// DatabaseTaskStore over Kysely on PostgreSQL or SQLite — the durable anchors the gateway is
// compared with. Each is set up the way a user would deploy it; the tables must exist already
// (the bench runs the SDK's `a2a-db upgrade` first, as an operator would).
//
// Env: BENCH_SDK_STORE (memory | postgres | sqlite; default memory),
//      BENCH_SDK_DB_URL (postgres: connection string), BENCH_SDK_SQLITE_FILE (sqlite: the file),
//      BENCH_SQLITE_DRIVER (sqlite: the folder of better-sqlite3 built for this Node, bench/sqlite-driver.ts),
//      BENCH_SQLITE_SYNCHRONOUS (sqlite: NORMAL unless set; FULL fsyncs every commit).

import { InMemoryTaskStore, type TaskStore } from '@a2a-js/sdk/server';
import { loadSqliteDriver } from './sqlite-driver.ts';

export const SDK_STORES = ['memory', 'postgres', 'sqlite'] as const;
export type SdkStoreKind = (typeof SDK_STORES)[number];

/** The pool's default size in node-postgres; a deployment that tunes nothing gets it. */
const PG_POOL_SIZE = 10;
/** application_name of the server's connections, so the bench can find their backends. */
export const PG_APPLICATION_NAME = 'a2a-bench-sdk';

export interface SdkStore {
  store: TaskStore;
  close(): Promise<void>;
}

export async function createSdkStore(kind: SdkStoreKind, env: NodeJS.ProcessEnv): Promise<SdkStore> {
  if (kind === 'memory') return { store: new InMemoryTaskStore(), close: async () => undefined };
  const { Kysely, PostgresDialect, SqliteDialect } = await import('kysely');
  const { DatabaseTaskStore } = await import('@a2a-js/sdk/server/database');
  if (kind === 'postgres') {
    const url = env.BENCH_SDK_DB_URL;
    if (!url) throw new Error('BENCH_SDK_STORE=postgres needs BENCH_SDK_DB_URL');
    const { default: pg } = await import('pg');
    // idleTimeoutMillis 0: connections stay open between rounds, so their backends' CPU is
    // counted from one PID each instead of being lost when an idle one is closed.
    const pool = new pg.Pool({ connectionString: url, max: PG_POOL_SIZE, idleTimeoutMillis: 0, application_name: PG_APPLICATION_NAME });
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    return { store: new DatabaseTaskStore(db), close: () => db.destroy() };
  }
  const file = env.BENCH_SDK_SQLITE_FILE;
  if (!file) throw new Error('BENCH_SDK_STORE=sqlite needs BENCH_SDK_SQLITE_FILE');
  const driver = env.BENCH_SQLITE_DRIVER;
  if (!driver) throw new Error('BENCH_SDK_STORE=sqlite needs BENCH_SQLITE_DRIVER');
  const Database = loadSqliteDriver(driver);
  const sqlite = new Database(file);
  // WAL, as the SQLite and better-sqlite3 docs advise for a server; synchronous NORMAL is the
  // usual companion (a commit survives a crash of the process, the last ones may not survive
  // power loss) — the same class as Redis's AOF fsync once a second.
  sqlite.pragma('journal_mode = WAL');
  const synchronous = (env.BENCH_SQLITE_SYNCHRONOUS || 'NORMAL').toUpperCase();
  if (!['OFF', 'NORMAL', 'FULL', 'EXTRA'].includes(synchronous)) throw new Error(`BENCH_SQLITE_SYNCHRONOUS must be OFF, NORMAL, FULL or EXTRA, got "${synchronous}"`);
  sqlite.pragma(`synchronous = ${synchronous}`);
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { store: new DatabaseTaskStore(db), close: () => db.destroy() };
}

export function parseSdkStore(raw: string | undefined): SdkStoreKind {
  const kind = raw === undefined || raw === '' ? 'memory' : raw;
  if (!(SDK_STORES as readonly string[]).includes(kind)) throw new Error(`BENCH_SDK_STORE must be one of ${SDK_STORES.join(', ')}, got "${kind}"`);
  return kind as SdkStoreKind;
}
