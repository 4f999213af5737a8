// The task hash's fields are written down once (src/store/task-hash.ts); the Lua scripts name
// them literally. This holds the two to each other, so a field added, renamed or misspelt on
// one side fails here instead of reading as a missing value.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { READ_TASK_FIELDS, TASK_HASH_FIELD_PREFIXES, TASK_HASH_FIELDS } from '../src/store/task-hash.ts';

const LUA_DIR = join(import.meta.dirname, '..', 'src', 'store', 'lua');
const SRC_DIR = join(import.meta.dirname, '..', 'src');

/** The comma-separated arguments of the call whose argument list starts at `from` (nested calls and strings kept whole). */
function argumentsAt(lua: string, from: number): string[] {
  const args: string[] = [];
  let depth = 0;
  let quoted = false;
  let current = '';
  for (let i = from; i < lua.length; i++) {
    const c = lua[i] as string;
    if (c === "'") quoted = !quoted;
    if (!quoted && (c === '(' || c === '{')) depth += 1;
    if (!quoted && (c === ')' || c === '}')) {
      if (depth === 0) break;
      depth -= 1;
    }
    if (c === ',' && depth === 0 && !quoted) {
      args.push(current.trim());
      current = '';
    } else current += c;
  }
  args.push(current.trim());
  return args;
}

/**
 * The task hash fields a script names: literal field arguments of its hash commands on the task
 * hash (KEYS[1] of a script whose header says so, or a variable named taskKey). A field made of
 * a literal and more ('digest:' .. id) counts as its literal prefix, marked with a trailing '*'.
 */
export function taskFieldsNamedIn(lua: string): Set<string> {
  const taskKeys = new Set(['taskKey']);
  if (/KEYS\[1\]\s+(coordinator )?task hash/.test(lua.slice(0, 2000)) || /--\[\[\s*The lease fence/.test(lua)) taskKeys.add('KEYS[1]');
  const named = new Set<string>();
  for (const call of lua.matchAll(/redis\.call\('(H[A-Z]+)',\s*/g)) {
    const [key, ...rest] = argumentsAt(lua, (call.index ?? 0) + call[0].length);
    if (key === undefined || !taskKeys.has(key)) continue;
    const command = call[1] as string;
    const fields = command === 'HSET' || command === 'HSETNX' ? rest.filter((_, i) => i % 2 === 0) : command === 'HMGET' || command === 'HDEL' ? rest : command === 'HGETALL' ? [] : rest.slice(0, 1);
    for (const field of fields) {
      const literal = /^'([^']*)'(\s*\.\.)?/.exec(field);
      if (literal !== null) named.add(`${literal[1]}${literal[2] === undefined ? '' : '*'}`);
    }
  }
  // Writes gathered for one HSET and one HDEL of the task hash (include/fieldWrites.lua).
  for (const write of lua.matchAll(/taskWrites\.(?:set|clear)\('([^']*)'(\s*\.\.)?/g)) named.add(`${write[1]}${write[2] === undefined ? '' : '*'}`);
  return named;
}

const luaFiles = [
  ...readdirSync(LUA_DIR).filter((f) => f.endsWith('.lua')).map((f) => join(LUA_DIR, f)),
  ...readdirSync(join(LUA_DIR, 'include')).map((f) => join(LUA_DIR, 'include', f)),
];
const namedByScript = new Map(luaFiles.map((file) => [file.slice(LUA_DIR.length + 1), taskFieldsNamedIn(readFileSync(file, 'utf8'))]));
const allNamed = new Set([...namedByScript.values()].flatMap((fields) => [...fields]));
const listed = new Set(Object.keys(TASK_HASH_FIELDS));
const prefixes = new Set(Object.values(TASK_HASH_FIELD_PREFIXES).map((prefix) => `${prefix}*`));

describe('task hash fields', () => {
  it('finds what a script names on the task hash, and only there', () => {
    const lua = `--[[
  KEYS[1] task hash   KEYS[2] steps hash
]]
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'bogusField', 'TASK_STATE_WORKING')
redis.call('HSET', KEYS[2], 'notTheTaskHash', 1)
if redis.call('HMGET', KEYS[1], 'owner',
  'contextId')[1] then redis.call('HSET', KEYS[1], 'digest:' .. ARGV[2], ARGV[3]) end
redis.call('HINCRBY', KEYS[1], 'turnAttempts', -1)
taskWrites.set('gathered', 1)
taskWrites.clear('lease:' .. ARGV[4])`;
    expect([...taskFieldsNamedIn(lua)].sort()).toEqual(['bogusField', 'contextId', 'digest:*', 'gathered', 'lease:*', 'owner', 'state', 'turnAttempts']);
  });

  it('reads the scripts (the fence, the creation, the replay bound among them)', () => {
    expect(namedByScript.get('include/fence.lua')).toEqual(new Set(['leaseGeneration']));
    expect(namedByScript.get('include/createTask.lua')).toContain('callerExtensions');
    expect(namedByScript.get('include/boundReplay.lua')).toContain('eventsTrimmedThrough');
    expect(allNamed.size).toBeGreaterThan(40);
  });

  it('every field a Lua script names on the task hash is in src/store/task-hash.ts', () => {
    const unlisted = [...namedByScript].flatMap(([script, fields]) => [...fields].filter((field) => !listed.has(field) && !prefixes.has(field)).map((field) => `${script}: ${field}`));
    expect(unlisted).toEqual([]);
  });

  it('every field src/store/task-hash.ts lists is one a script reads or writes', () => {
    expect([...listed].filter((field) => !allNamed.has(field))).toEqual([]);
  });

  it("READ_TASK_FIELDS is readTask-4.lua's read (include/taskSnapshot.lua), in its order", () => {
    const lua = readFileSync(join(LUA_DIR, 'include', 'taskSnapshot.lua'), 'utf8');
    const read = /local fields = redis\.call\('HMGET', taskKey, ([^)]*)\)/.exec(lua);
    expect(read).not.toBeNull();
    const fields = [...(read?.[1] ?? '').matchAll(/'([^']+)'/g)].map((match) => match[1]);
    expect(fields).toEqual([...READ_TASK_FIELDS]);
  });

  it('docs/task-store.md lists every field', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'task-store.md'), 'utf8');
    expect([...listed].filter((field) => !doc.includes(`| \`${field}\` |`))).toEqual([]);
  });

  it('no TypeScript source names a task hash field by a string literal of its own', () => {
    const sources = (readdirSync(SRC_DIR, { recursive: true }) as string[]).filter((file) => file.endsWith('.ts') && !file.endsWith('task-hash.ts'));
    // A hash command whose first argument ends in `.task` (the task hash key), then a literal.
    const literal = /\.h(?:m?get|set|del|exists|incrby)\((?:[^;()]|\((?:[^()]|\([^()]*\))*\))*?\.task\s*,\s*['`]([A-Za-z_]+)/g;
    const planted = "this.redis.hget(this.keys.task(taskId).task, 'parentTaskId'); pipeline.hmget(this.keys.task((entries[i] as E).taskId).task, 'owner', 'state')";
    expect([...planted.matchAll(literal)].map((match) => match[1])).toEqual(['parentTaskId', 'owner']);
    const found = sources.flatMap((file) => [...readFileSync(join(SRC_DIR, file), 'utf8').matchAll(literal)].map((match) => `${file}: ${match[1]}`));
    expect(found).toEqual([]);
  });
});
