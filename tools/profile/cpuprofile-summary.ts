// Where a process's CPU went, from one or more V8 .cpuprofile files (`node --cpu-prof`, the abuse
// run's ABUSE_SERVE_NODE_ARGS, or tools/profile/cpu-prof-hook.mjs): self and inclusive time by
// package, file and function, busiest first, so a hot path can be read without a browser.
//
//   node --import tsx tools/profile/cpuprofile-summary.ts PROFILE... [options]
//
// --by LIST      which tables: package,file,function (all three unless told)
// --top N        rows per table, and per --callers list (30)
// --match TEXT   keep the rows whose name contains TEXT
// --per N        divide every figure by N (e.g. the tasks the profile covered): µs per unit, not ms
// --root DIR     file names relative to DIR (the current directory)
// --from/--to US keep the samples taken within that window, in the monotonic clock's µs (what the
//                profile's timestamps and process.hrtime count; the abuse run prints each
//                attack's window); with several files, the same window in each
// --callers TEXT the time in and under the innermost function matching TEXT, by the chain of its
//                callers (--depth frames up, 6 unless told): who pays for writeUtf8String, say
// --focus TEXT   the top-down tree under the outermost function matching TEXT (--depth levels,
//                3 unless told; paths under 0.2% of busy time left out)
//
// A sample stands for the time until the next one. Idle samples count in "sampled" only; the
// percentages are of busy time. A function (or file, package) met twice on one stack, as in
// recursion, counts once towards its inclusive time.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The time sampled at one node of the profile's tree, with its stack: leaf first, root left out. */
interface Stack {
  frames: CallFrame[];
  us: number;
}

const usage = 'usage: cpuprofile-summary.ts PROFILE... [--by package,file,function] [--top N] [--match TEXT] [--per N] [--root DIR] [--from US --to US] [--callers TEXT | --focus TEXT] [--depth N]';

const { values, positionals: files } = parseArgs({
  allowPositionals: true,
  options: {
    by: { type: 'string', default: 'package,file,function' },
    top: { type: 'string', default: '30' },
    match: { type: 'string' },
    per: { type: 'string' },
    root: { type: 'string', default: process.cwd() },
    from: { type: 'string' },
    to: { type: 'string' },
    callers: { type: 'string' },
    focus: { type: 'string' },
    depth: { type: 'string' },
  },
});

function fail(message: string): never {
  process.stderr.write(`${message}\n${usage}\n`);
  process.exit(2);
}

function numberOption(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : fail(`--${name} wants a number, not ${text}`);
}

const groups = { package: packageOf, file: fileOf, function: functionOf } satisfies Record<string, (frame: CallFrame) => string>;
type Group = keyof typeof groups;
const tables = values.by.split(',').map((name) => (Object.hasOwn(groups, name) ? (name as Group) : fail(`--by: no table ${name}`)));
const top = numberOption('top', values.top) ?? 30;
const per = numberOption('per', values.per);
const fromUs = numberOption('from', values.from);
const toUs = numberOption('to', values.to);
const depth = numberOption('depth', values.depth) ?? (values.callers === undefined ? 3 : 6);
if (files.length === 0) fail('no profile given');

/** A file's path relative to --root, '(native)' for V8's and the runtime's own frames. */
function fileOf(frame: CallFrame): string {
  if (frame.url === '') return '(native)';
  const path = frame.url.replace(/^file:\/\//, '');
  return path.startsWith(`${values.root}/`) ? path.slice(values.root.length + 1) : path;
}

/** The package a frame belongs to: node_modules/<pkg> (scoped too), node:<module>, or our own top two directories. */
function packageOf(frame: CallFrame): string {
  if (frame.url.startsWith('node:')) return `node:${frame.url.slice(5).split('/')[0]}`;
  const file = fileOf(frame);
  const modules = file.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const [scope = '', name = ''] = file.slice(modules + 'node_modules/'.length).split('/');
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  const parts = file.split('/');
  return parts.length > 2 ? parts.slice(0, 2).join('/') : (parts[0] ?? file);
}

function functionOf(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  return frame.url === '' ? name : `${name} ${fileOf(frame)}:${frame.lineNumber + 1}`;
}

/** One profile's samples within the window, summed by the node they hit, each with its stack. */
function readStacks(file: string): Stack[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const frameOf = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const usByNode = new Map<number, number>();
  let at = profile.startTime;
  profile.samples.forEach((node, index) => {
    at += profile.timeDeltas[index] ?? 0;
    if ((fromUs !== undefined && at < fromUs) || (toUs !== undefined && at > toUs)) return;
    usByNode.set(node, (usByNode.get(node) ?? 0) + (profile.timeDeltas[index + 1] ?? 0));
  });
  return [...usByNode].map(([leaf, us]) => {
    const frames: CallFrame[] = [];
    for (let node: number | undefined = leaf; node !== undefined && parentOf.has(node); node = parentOf.get(node)) {
      const frame = frameOf.get(node);
      if (frame !== undefined) frames.push(frame);
    }
    return { frames, us };
  });
}

const add = (sums: Map<string, number>, key: string, us: number): void => void sums.set(key, (sums.get(key) ?? 0) + us);
const byGroup = (): Record<Group, Map<string, number>> => ({ package: new Map(), file: new Map(), function: new Map() });
const selfUs = byGroup();
const inclusiveUs = byGroup();
const { callers, focus } = values;
const callerChains = new Map<string, number>();
const focusPaths = new Map<string, number>();
let sampledUs = 0;
let idleUs = 0;
for (const file of files) {
  for (const { frames, us } of readStacks(file)) {
    sampledUs += us;
    const leaf = frames[0];
    if (leaf === undefined) continue;
    if (leaf.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    for (const group of tables) {
      const keyOf = groups[group];
      add(selfUs[group], keyOf(leaf), us);
      for (const key of new Set(frames.map(keyOf))) add(inclusiveUs[group], key, us);
    }
    const names = frames.map(functionOf);
    if (callers !== undefined) {
      const at = names.findIndex((name) => name.includes(callers));
      if (at >= 0) add(callerChains, names.slice(at, at + depth + 1).join(' < '), us);
    }
    if (focus !== undefined) {
      const down = [...names].reverse();
      const at = down.findIndex((name) => name.includes(focus));
      // Each path from the focused frame down, so that every level of the tree has its own total.
      if (at >= 0) for (let end = at + 1; end <= Math.min(down.length, at + depth + 1); end++) add(focusPaths, down.slice(at, end).join(' > '), us);
    }
  }
}

const busyUs = sampledUs - idleUs;
const unit = per === undefined ? 'ms' : `µs per unit (${per})`;
const figure = (us: number): string => (per === undefined ? us / 1000 : us / per).toFixed(1).padStart(10);
const share = (us: number): string => `${(busyUs === 0 ? 0 : (100 * us) / busyUs).toFixed(1)}%`.padStart(7);
const print = (line: string): void => void process.stdout.write(`${line}\n`);
const ms = (us: number): string => (us / 1000).toFixed(0);

const span = fromUs === undefined && toUs === undefined ? '' : ` within ${values.from ?? '…'}-${values.to ?? '…'} µs`;
const perUnit = per === undefined ? '' : `; per unit (${per}): ${(busyUs / per).toFixed(1)} µs busy`;
print(`profiles: ${files.length}${span}; sampled ${ms(sampledUs)} ms, idle ${ms(idleUs)} ms, busy ${ms(busyUs)} ms${perUnit}`);

if (callers !== undefined) {
  print(`\n## time in and under "${callers}", by its callers (innermost first; ${unit})\n`);
  for (const [chain, us] of [...callerChains].sort(([, a], [, b]) => b - a).slice(0, top)) print(`${figure(us)} ${share(us)}  ${chain}`);
}
if (focus !== undefined) {
  print(`\n## top-down under "${focus}" (inclusive; ${unit})\n`);
  for (const [path, us] of [...focusPaths].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (us < busyUs * 0.002) continue;
    const names = path.split(' > ');
    print(`${figure(us)} ${share(us)}  ${'  '.repeat(names.length - 1)}${names.at(-1)}`);
  }
}
if (callers === undefined && focus === undefined) {
  const table = (group: Group, sortBy: 'self' | 'incl'): void => {
    const self = selfUs[group];
    const inclusive = inclusiveUs[group];
    const order = sortBy === 'self' ? self : inclusive;
    const keys = [...inclusive.keys()].filter((key) => values.match === undefined || key.includes(values.match));
    keys.sort((a, b) => (order.get(b) ?? 0) - (order.get(a) ?? 0));
    print(`\n## by ${group} (sorted by ${sortBy}; ${unit})\n`);
    print(`${'self'.padStart(10)} ${'self%'.padStart(7)} ${'incl'.padStart(10)} ${'incl%'.padStart(7)}  name`);
    for (const key of keys.slice(0, top)) {
      const [s, n] = [self.get(key) ?? 0, inclusive.get(key) ?? 0];
      print(`${figure(s)} ${share(s)} ${figure(n)} ${share(n)}  ${key}`);
    }
  };
  for (const group of tables) {
    table(group, 'self');
    if (group === 'function') table(group, 'incl');
  }
}
