// Loaded with `--import` into a process (e.g. ABUSE_SERVE_NODE_ARGS="--import ./tools/profile/loop-stalls.mjs"):
// writes $A2A_LOOP_STALLS_DIR/<pid>-stalls.log, one line per event-loop stall of
// A2A_LOOP_STALL_MS (25) or more and per garbage collection of 5 ms or more, each stamped with the
// wall clock in ms, so a victim's slow calls can be laid beside what held the process's main
// thread. A stall is a 5 ms timer firing late; the line says by how much it was held.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';

const file = join(process.env.A2A_LOOP_STALLS_DIR ?? '.', `${process.pid}-stalls.log`);
const stallMs = Number(process.env.A2A_LOOP_STALL_MS ?? 25);
const kinds = new Map([
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'gc major'],
  [constants.NODE_PERFORMANCE_GC_MINOR, 'gc minor'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'gc incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'gc weak callbacks'],
]);
const at = (relativeMs) => Math.round(performance.timeOrigin + relativeMs);

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.duration >= 5) appendFileSync(file, `${at(entry.startTime)} ${kinds.get(entry.detail?.kind) ?? 'gc'} ${entry.duration.toFixed(1)} ms\n`);
  }
}).observe({ entryTypes: ['gc'] });

let last = performance.now();
setInterval(() => {
  const now = performance.now();
  if (now - last >= stallMs + 5) appendFileSync(file, `${at(now)} stall ${(now - last - 5).toFixed(1)} ms\n`);
  last = now;
}, 5).unref();
