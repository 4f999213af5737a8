// Where a process's CPU went, from a V8 .cpuprofile (`node --cpu-prof`, e.g. the abuse run's
// ABUSE_SERVE_NODE_ARGS): self and inclusive time summed by function, busiest first. A function
// met twice on one stack (recursion) counts once towards its inclusive time.
//
//   node --import tsx tools/cpu-profile/summary.ts PROFILE [--from US --to US] [--top N] [--match TEXT] [--callers TEXT]
//
// --from/--to keep the samples taken within that window, in the monotonic clock's microseconds
// (what the profile's timestamps and process.hrtime count; the abuse run prints each attack's
// window). --match keeps the functions whose name or file contains TEXT. --callers sums the time
// spent in (and under) the innermost function matching TEXT by the chain of callers above it
// (up to --depth frames, 6 unless told): who pays for writeUtf8String, say.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface Totals {
  selfUs: number;
  totalUs: number;
}

/** A function's name as the summary shows it: name, file (last two path segments) and line. */
function functionKey(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url === '' ? '' : url.split('/').slice(-2).join('/');
  return file === '' ? functionName || '(anonymous)' : `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
}

function summarize(
  profile: CpuProfile,
  window: { fromUs?: number; toUs?: number } = {},
  callers?: { match: string; depth: number },
): { byFunction: Map<string, Totals>; sampledUs: number; byCallers: Map<string, number> } {
  const byId = new Map<number, ProfileNode>(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const byFunction = new Map<string, Totals>();
  const byCallers = new Map<string, number>();
  const totalsOf = (key: string): Totals => {
    let totals = byFunction.get(key);
    if (totals === undefined) byFunction.set(key, (totals = { selfUs: 0, totalUs: 0 }));
    return totals;
  };
  let at = profile.startTime;
  let sampledUs = 0;
  profile.samples.forEach((sample, index) => {
    at += profile.timeDeltas[index] ?? 0;
    // A sample stands for the time until the next one.
    const weight = profile.timeDeltas[index + 1] ?? 0;
    if ((window.fromUs !== undefined && at < window.fromUs) || (window.toUs !== undefined && at > window.toUs)) return;
    sampledUs += weight;
    const leaf = byId.get(sample);
    if (leaf === undefined) return;
    totalsOf(functionKey(leaf)).selfUs += weight;
    const seen = new Set<string>();
    const stack: string[] = [];
    for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id);
      if (node === undefined) break;
      const key = functionKey(node);
      stack.push(key);
      if (seen.has(key)) continue;
      seen.add(key);
      totalsOf(key).totalUs += weight;
    }
    if (callers !== undefined) {
      const at = stack.findIndex((key) => key.includes(callers.match));
      if (at >= 0) {
        const chain = stack.slice(at, at + callers.depth + 1).join(' < ');
        byCallers.set(chain, (byCallers.get(chain) ?? 0) + weight);
      }
    }
  });
  return { byFunction, sampledUs, byCallers };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      top: { type: 'string', default: '40' },
      match: { type: 'string' },
      callers: { type: 'string' },
      depth: { type: 'string', default: '6' },
    },
  });
  const file = positionals[0];
  if (file === undefined) {
    process.stderr.write('usage: summary.ts PROFILE [--from US --to US] [--top N] [--match TEXT]\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const window = { ...(values.from === undefined ? {} : { fromUs: Number(values.from) }), ...(values.to === undefined ? {} : { toUs: Number(values.to) }) };
  const callers = values.callers === undefined ? undefined : { match: values.callers, depth: Number(values.depth) };
  const { byFunction, sampledUs, byCallers } = summarize(profile, window, callers);
  const idle = byFunction.get('(idle)')?.selfUs ?? 0;
  const top = Number(values.top);
  const rows = [...byFunction].filter(([key]) => values.match === undefined || key.includes(values.match));
  const print = (title: string, order: (a: Totals, b: Totals) => number): void => {
    process.stdout.write(`\n${title}\n   self s   total s  function\n`);
    for (const [key, totals] of [...rows].sort(([, a], [, b]) => order(a, b)).slice(0, top)) {
      process.stdout.write(`  ${seconds(totals.selfUs)}  ${seconds(totals.totalUs)}  ${key}\n`);
    }
  };
  const seconds = (us: number): string => (us / 1e6).toFixed(2).padStart(7);
  if (callers !== undefined) {
    process.stdout.write(`time in and under ${callers.match}, by its callers (innermost first)\n`);
    for (const [chain, us] of [...byCallers].sort(([, a], [, b]) => b - a).slice(0, Number(values.top))) process.stdout.write(`  ${seconds(us)}  ${chain}\n`);
    return;
  }
  process.stdout.write(`sampled ${seconds(sampledUs).trim()} s, busy ${seconds(sampledUs - idle).trim()} s (not idle)\n`);
  print('by self time', (a, b) => b.selfUs - a.selfUs);
  print('by inclusive time', (a, b) => b.totalUs - a.totalUs);
}

main();
