// A suite's own redis-server and one client of it, for the enclosing describe block (or the
// file): started before its tests, stopped after them. For store-level suites whose counts
// (MONITOR, INFO) must see nothing but their own commands.
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startOwnRedis, type OwnRedis } from './redis-server.ts';

/** Starts the server and hands the suite its client (through `use`, before the first test). */
export function useOwnRedis(use: (client: Redis) => void): void {
  let own: OwnRedis | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    own = await startOwnRedis();
    client = new Redis(own.url);
    use(client);
  });
  afterAll(async () => {
    await client?.quit();
    await own?.stop();
  });
}
