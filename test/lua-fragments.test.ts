// The Lua fragments (src/store/lua/include) are the one definition of what they do: a script
// that appends to a task's events stream does it through appendEvent.lua, so every event is
// stored and announced the same way (and as SPUBLISH on a Cluster, where the loader renames it).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const LUA_DIR = join(import.meta.dirname, '..', 'src', 'store', 'lua');
const scripts = readdirSync(LUA_DIR)
  .filter((file) => file.endsWith('.lua'))
  .map((file) => ({ file, lua: readFileSync(join(LUA_DIR, file), 'utf8') }));
/** The script's header (its leading --[[ ]] comment), where @include lines go. */
const headerOf = (lua: string): string => lua.slice(0, lua.indexOf(']]'));
/** The functions of fragments that append through appendEvent.lua (include/takeLease.lua): a script calling one appends too. */
const appendingFunctions = readdirSync(join(LUA_DIR, 'include'))
  .filter((file) => file !== 'appendEvent.lua')
  .map((file) => readFileSync(join(LUA_DIR, 'include', file), 'utf8'))
  .filter((lua) => lua.includes('__appendEvent('))
  .flatMap((lua) => [...lua.matchAll(/local function (__[A-Za-z]+)\(/g)].map((match) => match[1] as string));
const appends = (lua: string): boolean => ['__appendEvent', ...appendingFunctions].some((name) => lua.includes(`${name}(`));

describe('Lua fragments', () => {
  it('no script appends to a stream itself: appendEvent.lua does', () => {
    const fragment = readFileSync(join(LUA_DIR, 'include', 'appendEvent.lua'), 'utf8');
    expect(fragment).toContain("redis.call('XADD'");
    expect(fragment).toContain("redis.call('PUBLISH'");
    expect(scripts.filter(({ lua }) => lua.includes("redis.call('XADD'")).map(({ file }) => file)).toEqual([]);
  });

  it('every script that appends an event includes the fragment, and only those do', () => {
    expect(appendingFunctions).toContain('__takeLease');
    const appending = scripts.filter(({ lua }) => appends(lua)).map(({ file }) => file);
    const including = scripts.filter(({ lua }) => /@include appendEvent\b/.test(headerOf(lua))).map(({ file }) => file);
    expect(appending.length).toBeGreaterThanOrEqual(9);
    expect(including).toEqual(appending);
  });

  it('every script that appends an event bounds the replay buffer (@bounds-events)', () => {
    const unbounded = scripts.filter(({ lua }) => appends(lua) && !/@bounds-events KEYS\[\d+\]/.test(headerOf(lua)));
    expect(unbounded.map(({ file }) => file)).toEqual([]);
  });
});
