import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isCluster, type RedisClient } from '../redis/connection.ts';
import { newId } from '../ids.ts';
import { DEFAULT_REPLAY_BOUND, type ReplayBound } from './replay-bound.ts';
import { assertOneSlot, SLOT_CHECK_ENV } from './script-slots.ts';
import { labelScript } from '../redis/command-guard.ts';

const LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), 'lua');
/** The control plane's scripts (src/store/control/), read like the task scripts. */
const CONTROL_LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), 'control', 'lua');
/** The consumers' scripts (src/store/consumers/). */
const CONSUMERS_LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), 'consumers', 'lua');

export type ScriptName =
  | 'claimTask'
  | 'createTask'
  | 'createClaimedTask'
  | 'claimTurn'
  | 'acceptMessage'
  | 'acceptClaimedMessage'
  | 'quotaRefund'
  | 'ownerIndex'
  | 'acquireLease'
  | 'appendEvents'
  | 'finishTurn'
  | 'cancelTask'
  | 'readTask'
  | 'readEventsAfter'
  | 'quotaRelease'
  | 'acknowledgeCancel'
  | 'startStep'
  | 'writeStep'
  | 'takeToken'
  | 'takeTokenPair'
  | 'registerAssignments'
  | 'grantSlots'
  | 'settleAssignment'
  | 'suspendTurn'
  | 'surfaceQuestion'
  | 'handBackTurn'
  | 'chargeBudget'
  | 'releaseLease'
  | 'renewLease'
  | 'writeAdapterState'
  | 'writeTurnRecord'
  | 'reconcileEntry'
  | 'releaseLock'
  | 'pushSaveConfig'
  | 'pushReadConfigs'
  | 'pushDeleteConfig'
  | 'pushNext'
  | 'pushSettle'
  | 'pushDeliveryState'
  | 'pushDeadLetter'
  | 'pushRemoveDeadLetter'
  | 'pushBreaker'
  | 'schedClaim'
  | 'schedCreate'
  | 'schedSetState'
  | 'schedFire'
  | 'schedFiringDone'
  | 'streamSlotTake'
  | 'streamSlotRenew'
  | 'runningSlotTake'
  | 'runningSlotRenew'
  | 'tenantBusyOwners'
  | 'controlWrite'
  | 'controlRead'
  | 'controlClaim'
  | 'consumerRequest'
  | 'consumerTaskStart'
  | 'consumerTaskUndo'
  | 'consumerCharge'
  | 'writeArtifactSegment'
  | 'switchArtifactSegments';

export type ScriptReply = (string | number | null)[];
export type ScriptRunner = (name: ScriptName, keys: string[], args: (string | number)[]) => Promise<ScriptReply>;

interface ScriptSource {
  /** undefined: a script of any number of keys (`<name>-var.lua`), called with its key count first. */
  numberOfKeys: number | undefined;
  lua: string;
  /** SHA1 of `lua`: what EVALSHA names it by. */
  sha: string;
  /** Runs at most once per call, however often the call reaches Redis (see ONCE_MARKER). */
  once: boolean;
  /** Appends to the replay buffer, which it then bounds (see BOUNDS_EVENTS_MARKER). */
  boundsEvents: boolean;
  /** Names keys of several slots, so runs on a single Redis only (see SINGLE_REDIS_MARKER). */
  singleRedis: boolean;
}

/**
 * Marks a script whose second application would do harm (a duplicated event, a turn finished
 * twice, a double charge). ioredis re-sends a command whose reply a dropped connection lost,
 * and the first send may well have been applied (and persisted) already. Each call of such a
 * script therefore carries a fresh call id as its last argument; the script remembers its last
 * call id and reply in the hash at KEYS[1] (the task's; one task's calls of one script come
 * from its lease holder one at a time, so the last call is the only one that can be in
 * flight), and a repeated call id gets the first reply back without running again.
 */
const ONCE_MARKER = '@once';
/**
 * The same for a script that several processes call for one task at once (a coordinator's
 * assignments are settled and granted by its children's workers): one remembered call would be
 * overwritten by another process's call before the lost reply's re-send arrives, and the re-send
 * would then run again and answer differently (a final settle answering "already settled"
 * instead of waking the coordinator). These remember their last SHARED_CALLS_KEPT calls.
 */
const ONCE_SHARED_MARKER = '@once-shared';
const SHARED_CALLS_KEPT = 64;

function wrapOnce(name: string, lua: string): string {
  return `local __call = table.remove(ARGV)
if redis.call('HGET', KEYS[1], '__call:${name}') == __call then return cjson.decode(redis.call('HGET', KEYS[1], '__reply:${name}')) end
local __reply = (function()
${lua}
end)()
-- A call refused as stale changed nothing and stays refused: it is not remembered.
if __reply[1] ~= 'STALE' and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], '__call:${name}', __call, '__reply:${name}', cjson.encode(__reply))
end
return __reply
`;
}

function wrapOnceShared(name: string, lua: string): string {
  return `local __call = table.remove(ARGV)
local __memoRaw = redis.call('HGET', KEYS[1], '__calls:${name}')
local __memo = __memoRaw and cjson.decode(__memoRaw) or { ids = {}, replies = {} }
if __memo.replies[__call] ~= nil then return __memo.replies[__call] end
local __reply = (function()
${lua}
end)()
if __reply[1] ~= 'STALE' and redis.call('EXISTS', KEYS[1]) == 1 then
  table.insert(__memo.ids, __call)
  __memo.replies[__call] = __reply
  while #__memo.ids > ${SHARED_CALLS_KEPT} do __memo.replies[table.remove(__memo.ids, 1)] = nil end
  redis.call('HSET', KEYS[1], '__calls:${name}', cjson.encode(__memo))
end
return __reply
`;
}

/**
 * Marks a script that appends to a task's events stream, naming the stream's key: the script is
 * wrapped in the replay bound (lua/include/boundReplay.lua), which trims the stream in the same
 * script, after the append. The wrapped script takes one key more than its file says (the task's
 * push cursors, last) and five arguments more (the ReplayBound, before the call id of @once);
 * the runner adds them. A call that appended nothing (refused, stale, a repeat) trims nothing.
 */
const BOUNDS_EVENTS_MARKER = /@bounds-events KEYS\[(\d+)\]/;

/**
 * Marks a script that joins steps a Cluster keeps apart (their keys live in different slots) into
 * one call on a single Redis, where any keys go together: one round trip and one script call
 * fewer. The runner refuses it on a Cluster, and the suite's one-slot check lets it through.
 */
const SINGLE_REDIS_MARKER = '@single-redis';

const fragmentOf = (name: string): string => readFileSync(join(LUA_DIR, 'include', `${name}.lua`), 'utf8');

/**
 * `@include <name>` in a script's header puts lua/include/<name>.lua (local functions shared by
 * several scripts, e.g. the owner's quota) before the script's own code.
 */
const INCLUDE_MARKER = /@include ([A-Za-z]+)/g;

function withIncludes(lua: string): string {
  const fragments = [...lua.matchAll(INCLUDE_MARKER)].map((match) => fragmentOf(match[1] as string));
  return fragments.length === 0 ? lua : `${fragments.join('\n')}\n${lua}`;
}

function wrapBoundsEvents(lua: string, eventsKeyIndex: number): string {
  const fragment = fragmentOf('boundReplay');
  return `${fragment}
local __holdMaxBytes = tonumber(table.remove(ARGV))
local __maxBytes = tonumber(table.remove(ARGV))
local __holdMaxEvents = tonumber(table.remove(ARGV))
local __maxAgeMs = tonumber(table.remove(ARGV))
local __maxEvents = tonumber(table.remove(ARGV))
local __cursorsKey = table.remove(KEYS)
-- What the script appends, counted by __appendEvent (include/appendEvent.lua) as it appends: the
-- events, their bytes (what the byte bound weighs) and the newest one's id, without reading the stream back.
local __appended = { count = 0, bytes = 0, lastId = '' }
local __reply = (function()
${lua}
end)()
if __appended.count > 0 then
  __boundReplay(KEYS[1], KEYS[${eventsKeyIndex}], __cursorsKey, __maxEvents, __maxAgeMs, __holdMaxEvents, __maxBytes, __holdMaxBytes, __appended)
end
return __reply
`;
}

const wrapperOf = (lua: string): ((name: string, lua: string) => string) | undefined =>
  lua.includes(ONCE_SHARED_MARKER) ? wrapOnceShared : lua.includes(ONCE_MARKER) ? wrapOnce : undefined;

const cachedSources = new Map<'plain' | 'sharded', Map<string, ScriptSource>>();

/**
 * Scripts publish a task's events and cancel requests with PUBLISH on channels of the task's
 * slot. On a Cluster they SPUBLISH instead (sharded pub/sub): the message then goes only to the
 * task's shard's subscribers, where PUBLISH would copy every event to every node. The scripts
 * are written once; the Cluster's copy is theirs with this one command renamed.
 */
const PUBLISH_CALL = /redis\.call\('PUBLISH', /g;
const shardedPublish = (lua: string): string => lua.replace(PUBLISH_CALL, "redis.call('SPUBLISH', ");

/** Reads src/store/lua/<name>-<keyCount>.lua (or <name>-var.lua) once per process (and mode). */
function scriptSources(mode: 'plain' | 'sharded' = 'plain'): Map<string, ScriptSource> {
  const cached = cachedSources.get(mode);
  if (cached !== undefined) return cached;
  const sources = new Map<string, ScriptSource>();
  const files = [LUA_DIR, CONTROL_LUA_DIR, CONSUMERS_LUA_DIR].flatMap((dir) => readdirSync(dir).map((file) => ({ dir, file })));
  for (const { dir, file } of files) {
    const match = /^([A-Za-z]+)-(\d+|var)\.lua$/.exec(file);
    if (match === null) continue;
    const read = withIncludes(readFileSync(join(dir, file), 'utf8'));
    const lua = mode === 'sharded' ? shardedPublish(read) : read;
    const wrap = wrapperOf(lua);
    const name = match[1] as string;
    const eventsKey = BOUNDS_EVENTS_MARKER.exec(lua);
    const bounded = eventsKey === null ? lua : wrapBoundsEvents(lua, Number(eventsKey[1]));
    const wrapped = wrap === undefined ? bounded : wrap(name, bounded);
    sources.set(name, {
      numberOfKeys: match[2] === 'var' ? undefined : Number(match[2]) + (eventsKey === null ? 0 : 1),
      lua: wrapped,
      sha: createHash('sha1').update(wrapped).digest('hex'),
      once: wrap !== undefined,
      boundsEvents: eventsKey !== null,
      singleRedis: lua.includes(SINGLE_REDIS_MARKER),
    });
  }
  cachedSources.set(mode, sources);
  return sources;
}

/**
 * A script by EVALSHA (EVAL when Redis does not have it yet: after a restart emptied its script
 * cache, until loadMissingScripts runs again). Not ioredis custom commands (defineCommand):
 * ioredis copies every command defined on a connection into each pipeline it builds, and
 * auto-pipelining builds one per tick, so a connection holding all the store's scripts beside
 * BullMQ's paid for about 120 of them on every batch of commands it sent. (Custom commands of
 * any number of keys would also take the key count as their first argument, which ioredis'
 * Cluster auto-pipelining mistakes for the first key.) The size guard names the script
 * (src/redis/command-guard.ts, labelScript).
 */
async function runScript(redis: RedisClient, source: ScriptSource, keys: readonly string[], argv: readonly (string | number)[]): Promise<ScriptReply> {
  try {
    return (await redis.evalsha(source.sha, keys.length, ...keys, ...argv)) as ScriptReply;
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return (await redis.eval(source.lua, keys.length, ...keys, ...argv)) as ScriptReply;
  }
}

const modeOf = (redis: RedisClient): 'plain' | 'sharded' => (isCluster(redis) ? 'sharded' : 'plain');

/** The Lua source of a script as `redis` runs it (SPUBLISH on a Cluster): for tests. */
export function scriptSource(name: ScriptName, redis: RedisClient): string | undefined {
  return scriptSources(modeOf(redis)).get(name)?.lua;
}

/**
 * The store's scripts on one connection, by EVALSHA (EVAL after a Redis restart flushed the
 * script cache, see runScript), as one typed entry point. A script
 * that bounds the replay buffer is called with `replay` (its caller passes the push cursors key
 * as the last key).
 */
export function defineScripts(redis: RedisClient, replay: ReplayBound = DEFAULT_REPLAY_BOUND): ScriptRunner {
  const sources = scriptSources(modeOf(redis));
  for (const [name, source] of sources) labelScript(source.sha, name);
  const checkSlots = process.env[SLOT_CHECK_ENV] === '1';
  const cluster = isCluster(redis);
  return async (name, keys, args) => {
    const source = sources.get(name);
    if (source === undefined) throw new Error(`No Lua script named ${name} in ${LUA_DIR}`);
    if (source.singleRedis) {
      if (cluster) throw new Error(`Script ${name} joins steps of several slots and runs on a single Redis only; on a Cluster call its steps apart (docs/redis-slots.md).`);
    } else if (checkSlots) assertOneSlot(name, keys);
    if (source.numberOfKeys !== undefined && keys.length !== source.numberOfKeys) {
      throw new Error(`Script ${name} takes ${source.numberOfKeys} keys, got ${keys.length}`);
    }
    const bound = source.boundsEvents ? [replay.maxEvents, replay.maxAgeMs, replay.pushHoldMaxEvents, replay.maxBytes, replay.pushHoldMaxBytes] : [];
    const argv = [...args, ...bound, ...(source.once ? [newId()] : [])];
    return runScript(redis, source, keys, argv);
  };
}

/**
 * Loads into Redis's script cache every script it lacks (SCRIPT EXISTS, then SCRIPT LOAD of the
 * missing ones): after a Redis restart the cache is empty. One round trip when all are there;
 * on a Cluster, one per master (each has a cache of its own).
 */
export async function loadMissingScripts(redis: RedisClient): Promise<void> {
  const sources = [...scriptSources(modeOf(redis)).values()].map((source) => ({ lua: source.lua, sha: source.sha }));
  if (isCluster(redis)) {
    await Promise.all(redis.nodes('master').map((node) => loadInto(node, sources)));
    return;
  }
  await loadInto(redis, sources);
}

async function loadInto(redis: RedisClient, sources: { lua: string; sha: string }[]): Promise<void> {
  const present = (await redis.script('EXISTS', ...sources.map((source) => source.sha))) as number[];
  const missing = sources.filter((_, index) => present[index] !== 1);
  await Promise.all(missing.map((source) => redis.script('LOAD', source.lua)));
}
