// The owner's indexes written from a process's notes (src/store/owner-index.ts): every note of a
// busy owner lands, in calls of at most NOTES_PER_CALL notes, so one flush never holds Redis for
// the whole backlog at once.
import { afterAll, describe, expect, it } from 'vitest';
import { RedisKeys } from '../src/store/keys.ts';
import { NOTES_PER_CALL, OwnerIndex } from '../src/store/owner-index.ts';
import { defineScripts, type ScriptRunner } from '../src/store/scripts.ts';
import { ownerKeyOf } from '../src/store/task-store.ts';
import { deletePrefix, openTestRedis, uniquePrefix } from './support/harness.ts';

const redis = openTestRedis();
const prefix = uniquePrefix('owner-index');

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

describe('OwnerIndex', () => {
  it('writes a flush of many notes in calls of at most NOTES_PER_CALL notes, every note landing', async () => {
    await redis.ping();
    const keys = new RedisKeys(prefix);
    const run = defineScripts(redis);
    const sizes: number[] = [];
    const counting: ScriptRunner = (name, scriptKeys, args) => {
      // Every note here has an index entry: ARGV[1] counts the call's notes.
      if (name === 'ownerIndex') sizes.push(Number(args[0]));
      return run(name, scriptKeys, args);
    };
    const index = new OwnerIndex(redis, counting, keys, 60_000);
    const owner = ownerKeyOf({ agent: 'default', tenant: '', subject: 'busy' });
    const total = NOTES_PER_CALL * 2 + 10;
    for (let i = 0; i < total; i++) index.note(owner, `task-${i}`, `context-${i % 7}`, 1_000 + i, i % 2 === 0 ? 1_000 + i : undefined);
    await index.flush();
    expect(sizes.length).toBe(3);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(NOTES_PER_CALL);
    expect(await redis.zcard(keys.ownerTasks(owner))).toBe(total);
    let inContexts = 0;
    for (let c = 0; c < 7; c++) inContexts += await redis.zcard(keys.ownerContextTasks(owner, `context-${c}`));
    expect(inContexts).toBe(total);
  });
});
