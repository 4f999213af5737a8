// Sums what a process's collector paused it for, from the lines `node --trace-gc` printed
// (Node 20's and Node 24's formats both), per task when the task count is given: how many
// scavenges (young generation) and mark-compacts (old), and the milliseconds of each, the
// latter's incremental marking steps included. Paired runs of tools/profile/blocking-profile.ts
// with BENCH_GATEWAY_NODE_FLAGS="--trace-gc ..." weigh a heap setting by the collector's own time,
// which the machine's noise moves far less than throughput.
// Usage: node --import tsx tools/profile/gc-trace-summary.ts <gateway.log> [tasks]
import { readFileSync } from 'node:fs';

const [file, tasksArg] = process.argv.slice(2);
if (file === undefined) {
  console.error('usage: gc-trace-summary.ts <log of a process run with --trace-gc> [tasks]');
  process.exit(2);
}
const tasks = tasksArg === undefined ? undefined : Number(tasksArg);

/** The pause of one collection: the figure before " / " in "…MB, 9.20 / 0.10 ms". */
const PAUSE = /([\d.]+) \/ [\d.]+ ms/;
/** A mark-compact's incremental steps, done before its final pause: "(+ 19.9 ms in 215 steps". */
const INCREMENTAL = /\(\+ ([\d.]+) ms in/;

const totals = { scavenges: 0, scavengeMs: 0, markCompacts: 0, markCompactMs: 0, incrementalMs: 0 };
for (const line of readFileSync(file, 'utf8').split('\n')) {
  const pause = Number(PAUSE.exec(line)?.[1] ?? 0);
  if (line.includes(': Scavenge')) {
    totals.scavenges += 1;
    totals.scavengeMs += pause;
  } else if (line.includes(': Mark-Compact')) {
    totals.markCompacts += 1;
    totals.markCompactMs += pause;
    totals.incrementalMs += Number(INCREMENTAL.exec(line)?.[1] ?? 0);
  }
}
const allMs = totals.scavengeMs + totals.markCompactMs + totals.incrementalMs;
console.log(
  `scavenges ${totals.scavenges} (${totals.scavengeMs.toFixed(1)} ms), mark-compacts ${totals.markCompacts} ` +
    `(${totals.markCompactMs.toFixed(1)} ms + ${totals.incrementalMs.toFixed(1)} ms incremental): ${allMs.toFixed(1)} ms` +
    (tasks === undefined || !(tasks > 0) ? '' : `, ${((1000 * allMs) / tasks).toFixed(1)} µs per task`),
);
