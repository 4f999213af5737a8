// Profiles the gateway under blocking SendMessage load: starts a redis-server of its own (so its
// command statistics and slow log hold this run's commands only), the gateway as `npm start`
// does (gateway and workers in one process) with --cpu-prof, drives it with the benchmark's
// autocannon load, then prints per task: the gateway process's CPU, Redis's CPU, and each Lua
// script's calls and microseconds (SLOWLOG with a threshold of 0 records every command).
// Usage: node --import tsx tools/profile/blocking-profile.ts [seconds=10] [connections=32] [outDir]
// Env: PROFILE_CPU=0 (no CPU profile, counts only), PROFILE_GATEWAY_DIR (another checkout's gateway),
// PROFILE_LOAD=streams (SendStreamingMessage streams instead; connections = streams at once),
// BENCH_GATEWAY_NODE_FLAGS (Node options of the gateway alone: `--trace-gc` writes its collections to
// <outDir>/gateway.log, which tools/profile/gc-trace-summary.ts sums per task),
// PROFILE_MONITOR=1 (also count the commands clients send, scripts' own calls left out, by MONITOR),
// PROFILE_REDIS_COUNT=1 (Redis runs under valgrind's callgrind: the instructions it executes per
// task, a figure the machine's noise does not move as it moves CPU time; Redis is ~50x slower so
// use few connections).
// The .cpuprofile (of the measured window only, tools/profile/cpu-prof-hook.mjs) lands in outDir; read it with tools/profile/cpuprofile-summary.ts --per <tasks>.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { cpuTicks, killAllChildrenSync, startGateway } from '../../bench/gateway-process.ts';
import { runSendMessageLoad } from '../../bench/load/send-message.ts';
import { runStreamLoad } from '../../bench/load/streams.ts';
import { freePort, whenRedisReady } from '../../test/support/redis-server.ts';
import { scriptSource, type ScriptName } from '../../src/store/scripts.ts';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 32);
const outDir = resolve(process.argv[4] ?? mkdtempSync(join(tmpdir(), 'a2a-profile-')));
const withProfile = process.env.PROFILE_CPU !== '0';
// PROFILE_LOAD=streams: SendStreamingMessage streams read to the end (connections = concurrent streams).
const streams = process.env.PROFILE_LOAD === 'streams';
mkdirSync(outDir, { recursive: true });
const repoRoot = resolve(import.meta.dirname, '..', '..');
// PROFILE_GATEWAY_DIR: run the gateway of another checkout (a baseline) under the same load and counts.
const gatewayRoot = resolve(process.env.PROFILE_GATEWAY_DIR ?? repoRoot);

const port = await freePort();
const redisDir = mkdtempSync(join(tmpdir(), 'a2a-profile-redis-'));
const redisArgs = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', redisDir];
const countInstructions = process.env.PROFILE_REDIS_COUNT === '1';
const callgrindOut = join(outDir, 'redis.callgrind');
const redisChild = countInstructions
  ? spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${callgrindOut}`, 'redis-server', ...redisArgs], { stdio: ['ignore', 'pipe', 'pipe'] })
  : spawn('redis-server', redisArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
/** Turns callgrind's instrumentation of Redis on or off, or dumps what it counted (callgrind_control). */
const callgrind = (flag: string): void => {
  execFileSync('callgrind_control', [flag, String(redisChild.pid)], { stdio: 'ignore' });
};
// Whatever ends this process (an error, a closed stdout), the Redis it started goes with it.
process.on('exit', () => {
  killAllChildrenSync();
  redisChild.kill('SIGKILL');
});
await whenRedisReady(redisChild, 'redis-server');
const redisUrl = `redis://127.0.0.1:${port}`;
const admin = new Redis(redisUrl);
const gateway = await startGateway({
  repoRoot: gatewayRoot,
  logDir: outDir,
  redisUrl,
  readyTimeoutMs: 240_000,
  // NODE_OPTIONS of this process (a V8 flag under test, say) reach the gateway beside the profiler's hook.
  env: withProfile ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${join(repoRoot, 'tools', 'profile', 'cpu-prof-hook.mjs')}`.trim(), A2A_CPU_PROF_DIR: outDir } : {},
});
try {
  // Warm up (scripts loaded, JIT warm), then count from a clean slate.
  await runSendMessageLoad({ url: gateway.jsonRpcUrl, connections, seconds: 2, returnImmediately: false });
  await new Promise((r) => setTimeout(r, 500));
  // PROFILE_SLOWLOG=0: no per-command log (it costs Redis CPU of its own); INFO commandstats only.
  const withSlowlog = process.env.PROFILE_SLOWLOG !== '0';
  if (withSlowlog) await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.config('SET', 'slowlog-max-len', '1000000');
  await admin.slowlog('RESET');
  await admin.config('RESETSTAT');
  if (withProfile) process.kill(gateway.pid, 'SIGUSR2');
  // MONITOR tells a client's command from a script's (source "lua"); it slows Redis, so only on demand.
  const sent = new Map<string, number>();
  const monitor = process.env.PROFILE_MONITOR === '1' ? await admin.monitor() : undefined;
  // The first commands of the window, scripts' own calls included, in order: what one task runs.
  const firstCommands: string[] = [];
  monitor?.on('monitor', (_time: string, args: string[], source: string) => {
    if (firstCommands.length < 2_000) firstCommands.push(`${source === 'lua' ? '    ' : ''}${args.map((a) => (a.length > 60 ? `${a.slice(0, 57)}...` : a)).join(' ')}`);
    if (source === 'lua') return;
    const name = (args[0] ?? '').toLowerCase();
    sent.set(name, (sent.get(name) ?? 0) + 1);
  });
  if (countInstructions) callgrind('--instr=on');
  const gwBefore = cpuTicks(gateway.pid);
  const redisBefore = cpuTicks(redisChild.pid as number);
  const result = streams
    ? await runStreamLoad({ url: gateway.jsonRpcUrl, concurrency: connections, seconds }).then((r) => ({ ok: r.completed, p50Ms: r.lastEventP50Ms, p99Ms: r.lastEventP99Ms }))
    : await runSendMessageLoad({ url: gateway.jsonRpcUrl, connections, seconds, returnImmediately: false });
  const gwTicks = cpuTicks(gateway.pid) - gwBefore;
  const redisTicks = cpuTicks(redisChild.pid as number) - redisBefore;
  monitor?.disconnect();
  if (countInstructions) {
    callgrind('--instr=off');
    callgrind('--dump');
  }
  if (monitor) writeFileSync(join(outDir, 'monitor.txt'), `${firstCommands.join('\n')}\n`);
  if (withProfile) {
    process.kill(gateway.pid, 'SIGUSR2');
    for (let i = 0; i < 100 && !readdirSync(outDir).some((f) => f.endsWith('.done')); i++) await new Promise((r) => setTimeout(r, 100));
  }
  const tasks = result.ok;
  const stats = (await admin.info('commandstats')) as string;
  const slow = (await admin.slowlog('GET', 1_000_000)) as [number, number, number, string[]][];
  await admin.config('SET', 'slowlog-log-slower-than', '10000');
  // Script names by SHA: the loader registers each script's wrapped source; hash what Redis holds.
  const shaNames = new Map<string, string>();
  for (const dir of ['lua', 'control/lua', 'consumers/lua']) {
    for (const file of readdirSync(join(repoRoot, 'src', 'store', dir))) {
      const m = /^([A-Za-z]+)-(\d+|var)\.lua$/.exec(file);
      const source = m ? scriptSource(m[1] as ScriptName, admin) : undefined;
      if (source !== undefined) shaNames.set(createHash('sha1').update(source).digest('hex'), `script ${m![1]}`);
    }
  }
  const byScript = new Map<string, { calls: number; usec: number }>();
  for (const [, , usec, args] of slow) {
    const cmd = (args[0] ?? '').toLowerCase();
    let name = cmd;
    if (cmd === 'evalsha' || cmd === 'eval') {
      const sha = cmd === 'eval' ? createHash('sha1').update(args[1] ?? '').digest('hex') : (args[1] ?? '');
      name = shaNames.get(sha) ?? `script ${sha.slice(0, 8)}`;
    }
    const entry = byScript.get(name) ?? { calls: 0, usec: 0 };
    entry.calls += 1;
    entry.usec += usec;
    byScript.set(name, entry);
  }
  // Scripts not ours (BullMQ's): named by their first keys.
  const keyHints = new Map<string, string>();
  for (const [, , , args] of slow) {
    const cmd = (args[0] ?? '').toLowerCase();
    if (cmd !== 'evalsha') continue;
    const sha = args[1] ?? '';
    if (keyHints.has(sha)) continue;
    const n = Number(args[2]);
    keyHints.set(sha, `${n} keys: ${args.slice(3, 3 + Math.min(n, 3)).map((k) => k.replace(/^[^:]*:/, '').replace(/\{[^}]*\}/, '{…}')).join(' ')}`);
  }
  console.log(`tasks ${tasks} in ${seconds}s (${(tasks / seconds).toFixed(0)} req/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, ${connections} connections)`);
  if (countInstructions) {
    // The dump holds what was counted while instrumentation was on: the measured window.
    const dumps = readdirSync(outDir).filter((f) => f.startsWith('redis.callgrind.'));
    const totals = dumps.map((f) => Number(/^totals: (\d+)/m.exec(readFileSync(join(outDir, f), 'utf8'))?.[1] ?? 0));
    const instructions = totals.reduce((a, b) => a + b, 0);
    console.log(`Redis instructions per task: ${(instructions / tasks / 1000).toFixed(1)} k (callgrind, ${tasks} tasks)`);
  }
  console.log(`CPU per task: gateway+workers ${((gwTicks * 10) / tasks).toFixed(3)} ms, redis ${((redisTicks * 10) / tasks).toFixed(3)} ms`);
  console.log(`\nRedis commands per task (SLOWLOG: calls and µs spent inside Redis per task):`);
  const rows = [...byScript].sort((a, b) => b[1].usec - a[1].usec);
  let total = 0;
  for (const [name, { calls, usec }] of rows) {
    total += usec;
    const sha = name.startsWith('script ') && /^script [0-9a-f]{8}$/.test(name) ? name.slice(7) : '';
    const hint = sha ? ([...keyHints].find(([s]) => s.startsWith(sha))?.[1] ?? '') : '';
    console.log(`${(calls / tasks).toFixed(2).padStart(8)} calls ${(usec / tasks).toFixed(1).padStart(8)} µs  ${(usec / calls).toFixed(1).padStart(7)} µs/call  ${name} ${hint}`);
  }
  console.log(`${''.padStart(14)} ${(total / tasks).toFixed(1).padStart(8)} µs in commands per task (Redis CPU per task ${((redisTicks * 10000) / tasks).toFixed(0)} µs)`);
  const lines = stats.split('\n').filter((l) => l.startsWith('cmdstat_'));
  console.log('\nINFO commandstats per task (Lua-internal calls included):');
  const parsed = lines.map((l) => {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(l);
    return m ? { name: m[1], calls: Number(m[2]), usec: Number(m[3]) } : undefined;
  }).filter((x) => x !== undefined);
  parsed.sort((a, b) => b!.usec - a!.usec);
  let inner = 0;
  for (const p of parsed) {
    inner += p!.calls;
    console.log(`${(p!.calls / tasks).toFixed(2).padStart(8)} calls ${(p!.usec / tasks).toFixed(1).padStart(8)} µs  ${p!.name}`);
  }
  console.log(`${(inner / tasks).toFixed(1).padStart(8)} commands per task in all`);
  if (monitor) {
    console.log('\nCommands sent by clients per task (MONITOR; a script call counts once):');
    let all = 0;
    for (const [name, n] of [...sent].sort((a, b) => b[1] - a[1])) {
      all += n;
      console.log(`${(n / tasks).toFixed(2).padStart(8)}  ${name}`);
    }
    console.log(`${(all / tasks).toFixed(2).padStart(8)}  in all`);
  }
} finally {
  await gateway.stop();
  admin.disconnect();
  redisChild.kill('SIGKILL');
}
if (withProfile) console.log(`\nprofiles: ${readdirSync(outDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(outDir, f)).join(' ')}`);
