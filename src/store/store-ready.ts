// Whether the store can serve now, for /readyz: Redis answers, and its script cache holds every
// script (a Redis restart empties it; loading them here spares the first requests after it).
import type { RedisClient } from '../redis/connection.ts';
import { loadMissingScripts } from './scripts.ts';

/** Resolves once Redis answered PING and holds every script; rejects with Redis's error otherwise. */
export async function prepareStore(redis: RedisClient): Promise<void> {
  await redis.ping();
  await loadMissingScripts(redis);
}
