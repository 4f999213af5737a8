import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';

const LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), 'lua');

export type ScriptName =
  | 'createTask'
  | 'acceptMessage'
  | 'acquireLease'
  | 'appendEvents'
  | 'finishTurn'
  | 'cancelTask'
  | 'readTask'
  | 'listTasks'
  | 'acknowledgeCancel'
  | 'startStep'
  | 'writeStep'
  | 'takeToken'
  | 'registerAssignments'
  | 'grantSlots'
  | 'settleAssignment'
  | 'suspendTurn'
  | 'surfaceQuestion'
  | 'handBackTurn'
  | 'chargeBudget'
  | 'reconcileEntry'
  | 'releaseLock';

type ScriptReply = (string | number | null)[];
export type ScriptRunner = (name: ScriptName, keys: string[], args: (string | number)[]) => Promise<ScriptReply>;

interface ScriptSource {
  numberOfKeys: number;
  lua: string;
}

let cachedSources: Map<string, ScriptSource> | undefined;

/** Reads src/store/lua/<name>-<keyCount>.lua once per process. */
function scriptSources(): Map<string, ScriptSource> {
  if (cachedSources !== undefined) return cachedSources;
  const sources = new Map<string, ScriptSource>();
  for (const file of readdirSync(LUA_DIR)) {
    const match = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
    if (match === null) continue;
    sources.set(match[1] as string, { numberOfKeys: Number(match[2]), lua: readFileSync(join(LUA_DIR, file), 'utf8') });
  }
  cachedSources = sources;
  return sources;
}

/**
 * Registers every script on the connection (ioredis sends EVALSHA and falls back to EVAL
 * after a Redis restart flushed the script cache) and returns one typed entry point.
 */
export function defineScripts(redis: Redis): ScriptRunner {
  for (const [name, source] of scriptSources()) {
    if (!(name in redis)) redis.defineCommand(name, source);
  }
  return async (name, keys, args) => {
    const source = scriptSources().get(name);
    if (source === undefined) throw new Error(`No Lua script named ${name} in ${LUA_DIR}`);
    if (keys.length !== source.numberOfKeys) {
      throw new Error(`Script ${name} takes ${source.numberOfKeys} keys, got ${keys.length}`);
    }
    const command = (redis as unknown as Record<string, (...a: (string | number)[]) => Promise<ScriptReply>>)[name];
    if (command === undefined) throw new Error(`Script ${name} is not defined on this connection`);
    return command.call(redis, ...keys, ...args);
  };
}
