// The typed script boundary (src/store/script-call.ts) against the Lua it calls: every
// definition names as many keys as its script file takes (plus the push cursors of a script that
// bounds the replay buffer) and as many arguments as its Lua reads, and packScriptCall lays named
// values out in the Lua's order with their encodings.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as assignmentScripts from '../src/store/assignment-scripts.ts';
import * as gatewayScripts from '../src/store/gateway-scripts.ts';
import * as limitScripts from '../src/store/limit-scripts.ts';
import * as maintenanceScripts from '../src/store/maintenance-scripts.ts';
import * as pushScripts from '../src/store/push-scripts.ts';
import * as scheduleScripts from '../src/store/schedule-scripts.ts';
import * as shareScripts from '../src/store/share-scripts.ts';
import * as turnScripts from '../src/store/turn-scripts.ts';
import { packScriptCall } from '../src/store/script-call.ts';
import { ROOT } from './support/harness.ts';

const LUA_DIR = join(ROOT, 'src', 'store', 'lua');
interface DescribedScript {
  name: string;
  keys: readonly string[];
  moreKeys?: string;
  args: object;
}
const exported: unknown[] = [gatewayScripts, turnScripts, maintenanceScripts, limitScripts, scheduleScripts, pushScripts, assignmentScripts, shareScripts].flatMap((module) => Object.values(module));
const definitions = exported.filter((value): value is DescribedScript => typeof value === 'object' && value !== null && 'name' in value && 'args' in value);
/** Scripts whose arguments include a list the Lua reads to its end. */
const VARIADIC_ARGS = new Set(['appendEvents', 'ownerIndex', 'registerAssignments', 'streamSlotRenew', 'runningSlotRenew']);

describe('script definitions', () => {
  it('cover every script, one definition each', () => {
    const names = definitions.map((definition) => definition.name);
    expect(new Set(names).size).toBe(names.length);
    const files = readdirSync(LUA_DIR).flatMap((entry) => /^([A-Za-z]+)-(\d+|var)\.lua$/.exec(entry)?.[1] ?? []);
    expect([...names].sort()).toEqual(files.sort());
  });

  it.each(definitions.map((definition) => [definition.name, definition] as const))('%s names the keys and arguments its Lua takes', (name, definition) => {
    const file = readdirSync(LUA_DIR).find((entry) => entry.startsWith(`${name}-`) && entry.endsWith('.lua')) as string;
    const lua = readFileSync(join(LUA_DIR, file), 'utf8');
    const keyCount = /-(\d+|var)\.lua$/.exec(file)?.[1] as string;
    if (keyCount === 'var') {
      expect(definition.moreKeys).toBeDefined();
    } else {
      const bounds = /@bounds-events KEYS\[\d+\]/.test(lua) ? 1 : 0;
      expect(definition.keys.length).toBe(Number(keyCount) + bounds);
      if (bounds === 1) expect(definition.keys.at(-1)).toBe('pushCursors');
    }
    if (VARIADIC_ARGS.has(name)) return;
    const read = [...lua.matchAll(/ARGV\[(\d+)\]/g)].map((match) => Number(match[1]));
    // The output bounds (include/outputBound.lua) are one named group, last, that the Lua pops off ARGV's end.
    const groups = /@include outputBound\b/.test(lua) ? 1 : 0;
    if (groups === 1) expect(Object.keys(definition.args).at(-1)).toBe('outputBounds');
    expect(Object.keys(definition.args).length).toBe(Math.max(0, ...read) + groups);
  });
});

describe('packScriptCall', () => {
  it('lays named values out in the Lua order, with their encodings and defaults', () => {
    const packed = packScriptCall(
      turnScripts.appendEventsScript,
      { task: 't', events: 'e', emitted: 'd', artifactChunks: 'a', pushCursors: 'p' },
      { generation: 3, eventChannel: 'ch', nowMs: 10, taskId: 'id', events: [{ message: { messageId: 'm', role: 'ROLE_AGENT', parts: [] } }], outputBounds: ['', '0', 1, 2, 3] },
    );
    expect(packed.keys).toEqual(['t', 'e', 'd', 'a', 'p']);
    expect(packed.argv).toEqual([3, 'ch', 10, 'id', '', '', '', '', '', 0, '', '0', '{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}', '', '0', 1, 2, 3]);
  });

  it('leaves out an optional argument the Lua defaults (a token bucket’s cost)', () => {
    expect(packScriptCall(limitScripts.takeTokenScript, { bucket: 'b' }, { perSecond: 2, burst: 5 }).argv).toEqual([2, 5]);
    expect(packScriptCall(limitScripts.takeTokenScript, { bucket: 'b' }, { perSecond: 2, burst: 5, cost: 3, mode: 'afterTheFact' }).argv).toEqual([2, 5, 3, '1']);
    expect(packScriptCall(limitScripts.takeTokenScript, { bucket: 'b' }, { perSecond: 2, burst: 5, cost: 3, mode: 'payFirst' }).argv).toEqual([2, 5, 3, '2']);
  });

  it('lays a variadic argument list out after the fixed ones', () => {
    const packed = packScriptCall(
      assignmentScripts.registerAssignmentsScript,
      { task: 't', assignments: 'a', pendingAssignments: 'p', delegations: 'd', slots: 's' },
      { generation: 2, delegation: 'x', settings: { name: 'x' }, records: [{ taskId: 'c1' }, { taskId: 'c2' }] },
    );
    expect(packed).toEqual({ keys: ['t', 'a', 'p', 'd', 's'], argv: [2, 'x', '{"name":"x"}', '{"taskId":"c1"}', '{"taskId":"c2"}'] });
  });

  it('appends a variadic script’s further keys after the named ones', () => {
    const packed = packScriptCall(
      maintenanceScripts.ownerIndexScript,
      { ownerTasks: 'o', ownerActiveTasks: 'a', contextTasks: ['c1', 'c2'] },
      { entries: [{ taskId: 't1', atMs: 5, contextKey: 4 }], drops: [{ taskId: 't2', maxScore: 6 }] },
    );
    expect(packed).toEqual({ keys: ['o', 'a', 'c1', 'c2'], argv: [1, 't1', 5, 4, 't2', 6] });
  });
});
