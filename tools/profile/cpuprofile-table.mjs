#!/usr/bin/env node
// Reads one or more V8 .cpuprofile files (node --cpu-prof) and prints where the time went:
// self and inclusive milliseconds by function, by file and by package, so a hot path can be
// read without a browser. Usage:
//   node tools/profile/cpuprofile-table.mjs <file.cpuprofile>... [--top N] [--per N] [--root DIR]
// --per N divides every figure by N (e.g. the number of tasks the profile covered), printing
// microseconds per unit instead of total ms.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const files = [];
let top = 30;
let per = 0;
let root = process.cwd();
let focus;
let depth = 3;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--top') top = Number(args[++i]);
  else if (args[i] === '--per') per = Number(args[++i]);
  else if (args[i] === '--root') root = args[++i];
  else if (args[i] === '--focus') focus = args[++i];
  else if (args[i] === '--depth') depth = Number(args[++i]);
  else files.push(args[i]);
}
if (files.length === 0) {
  console.error('usage: cpuprofile-table.mjs <file.cpuprofile>... [--top N] [--per N] [--root DIR]');
  process.exit(2);
}

const shortFile = (url) => {
  if (!url) return '(native)';
  let f = url.replace(/^file:\/\//, '');
  if (f.startsWith(root)) f = f.slice(root.length + 1);
  return f;
};
// The package a file belongs to: node_modules/<pkg> (scoped too), node: internals, or our own dir.
const packageOf = (url) => {
  if (!url) return '(native/gc)';
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const f = shortFile(url);
  const nm = f.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = f.slice(nm + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const parts = f.split('/');
  return parts.length > 2 ? parts.slice(0, 2).join('/') : parts[0];
};

// --focus NAME: a top-down tree under every frame whose function name or file contains NAME
// (inclusive time of each callee path, to --depth levels).
const tree = new Map();
const selfByFn = new Map();
const inclByFn = new Map();
const selfByFile = new Map();
const inclByFile = new Map();
const selfByPkg = new Map();
const inclByPkg = new Map();
let totalMs = 0;
let idleMs = 0;
const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);

for (const file of files) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Sample durations: timeDeltas[i] is the time before sample i.
  const selfUs = new Map();
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i + 1] ?? 0; // the time this sample stood for
    add(selfUs, prof.samples[i], dt);
  }
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    const cf = node.callFrame;
    const ms = us / 1000;
    totalMs += ms;
    if (cf.functionName === '(idle)') { idleMs += ms; continue; }
    const fnKey = `${cf.functionName || '(anonymous)'} ${shortFile(cf.url)}:${cf.lineNumber + 1}`;
    add(selfByFn, fnKey, ms);
    add(selfByFile, shortFile(cf.url), ms);
    add(selfByPkg, packageOf(cf.url), ms);
    if (focus !== undefined) {
      const stack = [];
      for (let cur = id; cur !== undefined; cur = parent.get(cur)) stack.push(byId.get(cur).callFrame);
      stack.reverse();
      const at = stack.findIndex((c) => `${c.functionName} ${shortFile(c.url)}`.includes(focus));
      if (at >= 0) {
        const path = stack.slice(at, at + depth + 1).map((c) => `${c.functionName || '(anonymous)'} ${shortFile(c.url)}:${c.lineNumber + 1}`);
        for (let d = 1; d <= path.length; d++) add(tree, path.slice(0, d).join(' > '), ms);
      }
    }
    // Inclusive: every distinct frame on the stack gets the sample once.
    const seenFn = new Set(), seenFile = new Set(), seenPkg = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const c = byId.get(cur).callFrame;
      if (c.functionName === '(root)') break;
      const k = `${c.functionName || '(anonymous)'} ${shortFile(c.url)}:${c.lineNumber + 1}`;
      if (!seenFn.has(k)) { seenFn.add(k); add(inclByFn, k, ms); }
      const f = shortFile(c.url);
      if (!seenFile.has(f)) { seenFile.add(f); add(inclByFile, f, ms); }
      const p = packageOf(c.url);
      if (!seenPkg.has(p)) { seenPkg.add(p); add(inclByPkg, p, ms); }
    }
  }
}

const busy = totalMs - idleMs;
const unit = per > 0 ? 'µs/unit' : 'ms';
const fmt = (ms) => (per > 0 ? ((ms * 1000) / per).toFixed(1) : ms.toFixed(1)).padStart(10);
const pct = (ms) => ((100 * ms) / busy).toFixed(1).padStart(6) + '%';
console.log(`profiles: ${files.length}; sampled ${totalMs.toFixed(0)} ms, idle ${idleMs.toFixed(0)} ms, busy ${busy.toFixed(0)} ms${per > 0 ? `; per unit (${per}): ${((busy * 1000) / per).toFixed(1)} µs` : ''}`);
const table = (title, self, incl, sortBy) => {
  const keys = [...new Set([...self.keys(), ...incl.keys()])];
  keys.sort((a, b) => ((sortBy === 'self' ? self : incl).get(b) ?? 0) - ((sortBy === 'self' ? self : incl).get(a) ?? 0));
  console.log(`\n## ${title} (sorted by ${sortBy}; ${unit})\n`);
  console.log(`${'self'.padStart(10)} ${'self%'.padStart(7)} ${'incl'.padStart(10)} ${'incl%'.padStart(7)}  name`);
  for (const k of keys.slice(0, top)) {
    const s = self.get(k) ?? 0, n = incl.get(k) ?? 0;
    console.log(`${fmt(s)} ${pct(s)} ${fmt(n)} ${pct(n)}  ${k}`);
  }
};
if (focus !== undefined) {
  console.log(`\n## top-down under "${focus}" (inclusive; ${unit})\n`);
  const rows = [...tree].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const threshold = busy * 0.002;
  for (const [path, ms] of rows) {
    if (ms < threshold) continue;
    const parts = path.split(' > ');
    console.log(`${fmt(ms)} ${pct(ms)}  ${'  '.repeat(parts.length - 1)}${parts[parts.length - 1]}`);
  }
  process.exit(0);
}
table('by package', selfByPkg, inclByPkg, 'self');
table('by file', selfByFile, inclByFile, 'self');
table('by function', selfByFn, inclByFn, 'self');
table('by function', selfByFn, inclByFn, 'incl');
