/**
 * `npm run bench` — the gateway against the official @a2a-js/sdk, under the same load.
 *
 * What it measures, for both servers, over JSON-RPC with `A2A-Version: 1.0`:
 *   1. SendMessage, blocking (32 connections): requests/s, latency p50/p99.
 *   2. SendMessage with returnImmediately: requests/s, p50/p99. The gateway's figure of merit is
 *      this against the SDK's *blocking* throughput — the SDK has no durable queue to hand off to.
 *   3. SendStreamingMessage: 200 workers looping "open stream, read to the end": time to first
 *      and to last SSE event (p50/p99), completed streams/s.
 *   4. Idle SubscribeToTask streams on one parked `long` task: server RSS growth per subscriber.
 *   5. Fan-out (gateway only; the SDK server has no sub-agent delegation): C workers each loop
 *      a blocking SendMessage to the demo `fanout` skill with A `echo` assignments (maxParallel 4,
 *      no reviewer): coordinators/s, assignments/s, coordinator latency p50/p99. A coordinator
 *      counts only if it ended COMPLETED with `completed` == A in its combined artifact; any
 *      other outcome is printed and makes the run exit non-zero (see bench/load/fanout.ts).
 *   6. Gateway overhead in front of a remote agent: the SDK echo server called directly vs through
 *      a second gateway whose `a2a` adapter fronts that same server (blocking SendMessage "echo
 *      hello", same connections and seconds): requests/s and p50/p99 of both, and their ratio.
 *   7. Push delivery (gateway only; see bench/load/push.ts): senders loop SendMessage with a webhook
 *      config to a local receiver: deliveries/s and event-to-receiver latency p50/p99, every task's
 *      deliveries checked (each event once, in order).
 *   8. Replay buffer memory (gateway only, no server; see bench/load/replay-memory.ts): one open
 *      task gets BENCH_REPLAY_EVENTS progress events with the replay bound (default settings) and
 *      one without it: MEMORY USAGE of its events stream at each checkpoint, and appends/s.
 *  11. Stages (gateway and SDK): one connection, blocking SendMessage "echo hello": p50/p99 of both, and
 *      a per-stage latency breakdown of one blocking task (accept, enqueue, pick-up, lease, adapter,
 *      events, finish, notify, response) from the marks a third gateway started with
 *      A2A_STAGE_MARKS_FILE records (src/telemetry/stage-marks.ts; bench/load/stages.ts).
 *  12. One connection, side by side (single): blocking SendMessage "echo hello" over one connection,
 *      in alternating rounds of the gateway, the baseline (BENCH_BASELINE) and the SDK server, the
 *      order reversed every other round; p50/p99 and CPU per task. Unlike stages, the gateways
 *      write no stage marks, and a latency cut shows against the baseline in the same rounds.
 *   9. Cost of telemetry (gateway only): blocking SendMessage on the gateway as above (tracing off)
 *      vs a second gateway with tracing on (OTLP http/protobuf to a local sink that accepts every
 *      export) and its /metrics scraped once a second on a metrics port: req/s, p50/p99 and CPU ms
 *      per request of both. Rounds alternate on-first and off-first; each round's on/off ratio is
 *      printed, and the targets apply to the median of those ratios (req/s >= 0.9, CPU <= 1.1).
 *      See bench/load/telemetry-sink.ts.
 *  10. Cost of WAIT (gateway only; see bench/load/replica-wait.ts): blocking SendMessage on a
 *      primary + replica the scenario starts, redisWaitReplicas 0 vs 1, alternating rounds:
 *      req/s and p50/p99 of both, and WAIT calls per request.
 *  12. Durable anchors (bench/anchors.ts): the SDK server on the SDK's DatabaseTaskStore, on
 *      PostgreSQL (a database of its own per run, dropped afterwards) and on SQLite (a WAL file in
 *      a temp dir), joins the blocking, streams and one-connection runs beside the in-memory one.
 *      A table gives each anchor's figures and the ratio gateway / anchor. An anchor that cannot
 *      be set up (PostgreSQL unreachable) is skipped with one line.
 *  13. Cost per task (bench/load/cost.ts), every blocking and streams round: CPU of the server's
 *      process tree (gateway + workers; an SDK server) plus the gateway's own Redis plus, for the
 *      PostgreSQL anchor, its backends and the cluster's WAL writer, checkpointer and background
 *      writer, over the tasks the round finished. On the gateway's own Redis, INFO commandstats
 *      and socket reads/writes per task. Beside it, the load generator's (this process's) CPU.
 *  14. Idle cost (`idle-redis`, gateway only; bench/load/idle-redis.ts): a fresh gateway (gateway +
 *      workers) on its own Redis settles, then Redis commands/s over a window with nothing sent.
 *  15. Speed targets (bench/report-anchors.ts renderSpeedTargets): issue 29's targets judged on the
 *      median rounds, each throughput target with what the cores and one event loop leave the
 *      gateway at the asked rate.
 * Each gateway runs on a redis-server of its own (bench/own-redis.ts: a free port, AOF with fsync
 * every second, data in a temp dir removed afterwards), so Redis's CPU and commands are its.
 * Throughput tests run in alternating rounds (gateway, sdk, gateway, sdk, ...) and report the
 * median round, so slow drift of the machine (thermal, noisy neighbours) hits both sides alike.
 *
 * Why the SDK server is a child process too: measuring it in-process would let it share the
 * load generator's event loop and heap, which both slows it down (autocannon and the SSE parsers
 * compete for the same thread) and makes its RSS unmeasurable. As children, both servers get
 * their own process, their own RSS from /proc, and the same loopback path from the client.
 *
 * Both servers run the same agent work: the gateway's demo adapter (echo: task, WORKING, artifact
 * of the input parts, COMPLETED) and bench/sdk-echo-server.ts mirroring it event for event. The
 * gateway is started exactly like `npm start` (A2A_PORT/HOST/KEY_PREFIX/LOG_LEVEL), plus
 * A2A_ADAPTER_OPTIONS={"stepMs":600000} so its `long` task really idles (see gateway-process.ts).
 *
 * The idle-subscriber test runs first, before any load, because per-subscriber RSS is a small
 * delta on top of the heap; thousands of finished tasks in the SDK's in-memory store (and a GC
 * returning memory mid-test) would otherwise swamp it.
 *
 * Flags: --only sdk | --only gateway (which servers).
 * Env: BENCH_ONLY — comma-separated scenarios to run (idle, idle-redis, blocking, immediate, streams,
 *      stages, single, fanout, remote, push, replay, telemetry, wait; default all), e.g. `BENCH_ONLY=fanout npm run bench` starts only the gateway,
 *      `BENCH_ONLY=remote` only the SDK server and the gateway in front of it.
 *      BENCH_SECONDS (10), BENCH_ROUNDS (3, min 2), BENCH_CONNECTIONS (32), BENCH_STREAMS (200),
 *      BENCH_SUBSCRIBERS (10000), BENCH_WARMUP_SECONDS (2), A2A_REDIS_URL (redis://127.0.0.1:6379:
 *      the Redis of the scenarios that bring none of their own, and of every gateway with BENCH_OWN_REDIS=0).
 *      BENCH_OWN_REDIS (1): each gateway on a redis-server the bench starts; 0 puts them all on
 *      A2A_REDIS_URL as before (Redis's CPU and commands are then not counted).
 *      Anchors: BENCH_ANCHORS (postgres,sqlite; "none" for neither), BENCH_PG_URL
 *      (postgres://postgres@127.0.0.1:5432/postgres: a role that may create databases),
 *      BENCH_SQLITE_SYNCHRONOUS (NORMAL; see bench/sdk-store.ts).
 *      Idle: BENCH_IDLE_SETTLE_SECONDS (5), BENCH_IDLE_SECONDS (10).
 *      Fan-out: BENCH_FANOUT_COORDINATORS (20), BENCH_FANOUT_ASSIGNMENTS (10, at most the demo's 20),
 *      BENCH_FANOUT_SECONDS (5 per round), BENCH_FANOUT_ROUNDS (3).
 *      Push: BENCH_PUSH_SENDERS (16), BENCH_PUSH_SECONDS (5 per round), BENCH_PUSH_ROUNDS (3).
 *      Replay: BENCH_REPLAY_EVENTS (100000), BENCH_REPLAY_CHECKPOINTS (10).
 *      BENCH_BASELINE: another checkout of this repository (its dependencies installed), e.g. a
 *      `git worktree` of the commit before a change. A third server started from it joins the
 *      blocking, returnImmediately, streams and single rounds (gateway, baseline, sdk, every round;
 *      every other round in reverse order, so neither checkout always goes first), and a
 *      second table compares this checkout with it (with CPU and Redis calls per task, and, with
 *      idle-redis, a baseline gateway's idle commands/s): "before and after" measured side by side,
 *      on the same machine in the same minutes, instead of two runs an hour apart.
 *      BENCH_GATEWAY_NODE_FLAGS: Node options for the gateway processes only (and the baseline's),
 *      e.g. `--max-semi-space-size=64` (bench/gateway-process.ts).
 * Output: a table on stdout, full data in bench/results/latest.json, server logs in
 * bench/results/{gateway,sdk}.log.
 */

import { cpus, loadavg } from 'node:os';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_REDIS_URL,
  cleanupAll,
  cpuTicks,
  freePort,
  killAllChildrenSync,
  redisUsedMemoryKb,
  rssKb,
  startSdkServer,
  waitForQuiet,
  type ServerName,
} from './gateway-process.ts';
import { ANCHOR_SERVER, DEFAULT_PG_URL, parseAnchors, redactUrl, startAnchor } from './anchors.ts';
import { costSources, startGatewayOn, type BenchServer } from './bench-server.ts';
import { describeCost, withCost, type Cost } from './load/cost.ts';
import { describeIdleRedis, runIdleRedis, type IdleRedisResult } from './load/idle-redis.ts';
import { killAllOwnRedisSync, stopAllOwnRedis } from './own-redis.ts';
import { medianCost, renderAnchorTable, renderCostLines, renderSpeedTargets } from './report-anchors.ts';
import { FANOUT_MAX_PARTS } from '../adapters/demo/fanout.ts';
import { runFanoutLoad, type FanoutLoadResult } from './load/fanout.ts';
import { runPushLoad, type PushLoadResult } from './load/push.ts';
import { runReplayMemory, type ReplayMemoryResult } from './load/replay-memory.ts';
import { runReplicaWait, type ReplicaWaitResult } from './load/replica-wait.ts';
import { runIdleSubscribers, type IdleSubscriberResult } from './load/idle-subscribers.ts';
import { runSendMessageLoad, type SendMessageLoadResult } from './load/send-message.ts';
import { runStreamLoad, type StreamLoadResult } from './load/streams.ts';
import { ratio, round } from './stats.ts';
import { renderStages, runOneConnection, runStageBreakdown, type StageBreakdown } from './load/stages.ts';
import { scrapeEvery, startTelemetrySink, type TelemetrySink } from './load/telemetry-sink.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');

// ---------- configuration ----------

function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number.parseInt(raw, 10);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`${name} must be an integer in [${min}, ${max}], got "${raw}"`);
  return n;
}

function parseOnly(argv: readonly string[]): ServerName | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const value = arg === '--only' ? argv[i + 1] : arg.startsWith('--only=') ? arg.slice('--only='.length) : undefined;
    if (value === undefined) continue;
    if (value === 'sdk' || value === 'gateway') return value;
    throw new Error(`--only expects "sdk" or "gateway", got "${value}"`);
  }
  return undefined;
}

const SCENARIOS = ['idle', 'idle-redis', 'blocking', 'immediate', 'streams', 'stages', 'single', 'fanout', 'remote', 'push', 'replay', 'telemetry', 'wait'] as const;
type Scenario = (typeof SCENARIOS)[number];
/** Scenarios both servers can run; fanout and push are gateway-only. */
const COMPARED: readonly Scenario[] = ['idle', 'blocking', 'immediate', 'streams', 'stages', 'single'];

function parseScenarios(raw: string | undefined): Scenario[] {
  if (raw === undefined || raw.trim() === '') return [...SCENARIOS];
  const picked = raw.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  for (const name of picked) {
    if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`BENCH_ONLY: unknown scenario "${name}"; expected some of ${SCENARIOS.join(', ')}`);
  }
  return SCENARIOS.filter((s) => picked.includes(s)); // canonical order
}

/** Fan-out shape fixed by the issue: echo children, at most 4 at once, no reviewer. */
const FANOUT_MAX_PARALLEL = 4;
const FANOUT_CHILD_TEXT = 'echo x';

// Bounds keep a typo from turning into an hour-long run or a fork bomb of sockets.
const config = {
  seconds: envInt('BENCH_SECONDS', 10, 1, 300),
  rounds: envInt('BENCH_ROUNDS', 3, 2, 10),
  connections: envInt('BENCH_CONNECTIONS', 32, 1, 1024),
  streams: envInt('BENCH_STREAMS', 200, 1, 2000),
  subscribers: envInt('BENCH_SUBSCRIBERS', 10_000, 10, 15_000),
  warmupSeconds: envInt('BENCH_WARMUP_SECONDS', 2, 0, 60),
  fanoutCoordinators: envInt('BENCH_FANOUT_COORDINATORS', 20, 1, 500),
  // The demo's fanout skill takes at most FANOUT_MAX_PARTS assignments; more would be cut off.
  fanoutAssignments: envInt('BENCH_FANOUT_ASSIGNMENTS', 10, 1, FANOUT_MAX_PARTS),
  fanoutSeconds: envInt('BENCH_FANOUT_SECONDS', 5, 1, 300),
  fanoutRounds: envInt('BENCH_FANOUT_ROUNDS', 3, 1, 10),
  pushSenders: envInt('BENCH_PUSH_SENDERS', 16, 1, 512),
  pushSeconds: envInt('BENCH_PUSH_SECONDS', 5, 1, 300),
  pushRounds: envInt('BENCH_PUSH_ROUNDS', 3, 1, 10),
  replayEvents: envInt('BENCH_REPLAY_EVENTS', 100_000, 100, 10_000_000),
  replayCheckpoints: envInt('BENCH_REPLAY_CHECKPOINTS', 10, 1, 100),
  redisUrl: process.env.A2A_REDIS_URL ?? DEFAULT_REDIS_URL,
  // Each gateway on a redis-server of its own (AOF everysec), so Redis's CPU and commands are its.
  ownRedis: process.env.BENCH_OWN_REDIS !== '0',
  anchors: parseAnchors(process.env.BENCH_ANCHORS),
  pgUrl: process.env.BENCH_PG_URL || DEFAULT_PG_URL,
  idleSettleSeconds: envInt('BENCH_IDLE_SETTLE_SECONDS', 5, 0, 600),
  idleSeconds: envInt('BENCH_IDLE_SECONDS', 10, 1, 600),
  only: parseOnly(process.argv.slice(2)),
  scenarios: parseScenarios(process.env.BENCH_ONLY),
  baseline: parseBaseline(process.env.BENCH_BASELINE),
};

/** The configuration as logged and written to latest.json: no password of BENCH_PG_URL. */
const shownConfig = { ...config, pgUrl: redactUrl(config.pgUrl) };

/** The baseline checkout and the commit it holds, or undefined when BENCH_BASELINE is unset. */
function parseBaseline(raw: string | undefined): { dir: string; commit: string } | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const dir = resolve(raw.trim());
  if (!existsSync(join(dir, 'src', 'cli', 'main.ts')) || !existsSync(join(dir, 'node_modules', 'tsx'))) {
    throw new Error(`BENCH_BASELINE=${raw}: not a checkout of this repository with its dependencies installed (run npm ci there first)`);
  }
  let commit = 'unknown commit';
  try {
    commit = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // Not a git checkout: the table says so instead of naming a commit.
  }
  return { dir, commit };
}
const GATEWAY_ONLY: readonly Scenario[] = ['idle-redis', 'fanout', 'push', 'replay', 'telemetry', 'wait'];
const runs = (scenario: Scenario): boolean =>
  config.scenarios.includes(scenario) && (!GATEWAY_ONLY.includes(scenario) || config.only !== 'sdk') && (scenario !== 'remote' || config.only === undefined);

const log = (msg: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

// ---------- lifecycle ----------

const servers: Partial<Record<ServerName, BenchServer>> = {};
let shuttingDown = false;

async function stopAll(): Promise<void> {
  const all = Object.values(servers);
  await Promise.all(
    all.map((s) =>
      s.stop().catch((err: unknown) => log(`stopping ${s.name} failed: ${(err as Error).message}`)),
    ),
  );
  await cleanupAll(); // anything spawned but never returned (e.g. interrupted mid-start)
  await stopAllOwnRedis();
}

function onSignal(signal: NodeJS.Signals): void {
  if (shuttingDown) return;
  shuttingDown = true;
  log(`${signal}: stopping servers and cleaning up`);
  const hardExit = setTimeout(() => process.exit(130), 15_000);
  hardExit.unref();
  void stopAll().finally(() => process.exit(130));
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
process.on('exit', () => {
  killAllChildrenSync();
  killAllOwnRedisSync();
});

// ---------- measurement helpers ----------

type Order = ServerName[];

/** Before each timed run both servers must be idle: the machine's cores are shared. */
async function quiesce(): Promise<void> {
  for (const s of Object.values(servers)) {
    const waited = await waitForQuiet(s.pid);
    if (waited > 5000) log(`${s.name} needed ${(waited / 1000).toFixed(1)} s to go idle`);
  }
}

/** The round with the median value of `key`; for even counts the lower middle, same rule for both. */
function medianRound<T>(rounds: readonly T[], key: (r: T) => number): T | undefined {
  const sorted = [...rounds].sort((a, b) => key(a) - key(b));
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

interface Series<T> {
  rounds: T[];
  median?: T;
}

type PerServer<T> = Partial<Record<ServerName, Series<T>>>;
/** A round's result with what it cost the server (bench/load/cost.ts). */
type Costed<T> = T & { cost?: Cost };

async function alternate<T>(
  label: string,
  order: Order,
  run: (s: BenchServer) => Promise<T>,
  key: (r: T) => number,
  describe: (r: T) => string,
  /** Reverse the order every other round (A B, B A, …): drift within a round then favours neither side. */
  swapEachRound = false,
): Promise<PerServer<T>> {
  const out: PerServer<T> = {};
  for (let r = 1; r <= config.rounds; r++) {
    for (const name of swapEachRound && r % 2 === 0 ? [...order].reverse() : order) {
      const server = servers[name] as BenchServer;
      await quiesce();
      const res = await run(server);
      (out[name] ??= { rounds: [] }).rounds.push(res);
      log(`${label} round ${r}/${config.rounds} ${name}: ${describe(res)}`);
    }
  }
  for (const name of order) {
    const series = out[name];
    if (series) {
      const m = medianRound(series.rounds, key);
      if (m !== undefined) series.median = m;
    }
  }
  return out;
}

const describeSend = (r: SendMessageLoadResult): string =>
  `${r.requestsPerSec.toFixed(0)} req/s p50 ${r.p50Ms.toFixed(1)} ms p99 ${r.p99Ms.toFixed(1)} ms` +
  (r.badBodies + r.non2xx + r.errors > 0 ? ` (bad ${r.badBodies}, non2xx ${r.non2xx}, errors ${r.errors})` : '');

const describeFanout = (r: FanoutLoadResult): string =>
  `${r.coordinatorsPerSec.toFixed(1)} coordinators/s, ${r.assignmentsPerSec.toFixed(0)} assignments/s, ` +
  `p50 ${r.p50Ms.toFixed(1)} ms p99 ${r.p99Ms.toFixed(1)} ms (${r.completed}/${r.sent} completed in ${r.durationSec.toFixed(1)} s)` +
  (r.failed > 0 ? ` (${r.failed} FAILED)` : '');

const describePush = (r: PushLoadResult): string =>
  `${r.deliveriesPerSec.toFixed(0)} deliveries/s, latency p50 ${r.latencyP50Ms.toFixed(1)} ms p99 ${r.latencyP99Ms.toFixed(1)} ms ` +
  `at ${r.latencyPhaseTasksPerSec.toFixed(0)} tasks/s (${r.deliveries} deliveries of ${r.tasks} tasks in ${r.durationSec.toFixed(1)} s, ${r.duplicates} repeated ids)` +
  (r.failed > 0 ? ` (${r.failed} tasks FAILED)` : '');

const describeStreams = (r: StreamLoadResult): string =>
  `${r.streamsPerSec.toFixed(0)} streams/s first p50 ${r.firstEventP50Ms.toFixed(1)} / p99 ${r.firstEventP99Ms.toFixed(1)} ms, ` +
  `last p50 ${r.lastEventP50Ms.toFixed(1)} / p99 ${r.lastEventP99Ms.toFixed(1)} ms` +
  (r.failed + r.incomplete > 0 ? ` (failed ${r.failed}, incomplete ${r.incomplete})` : '');

// ---------- report ----------

interface Row {
  metric: string;
  gateway: number;
  sdk: number;
  ratio: number;
  target: string;
  /** undefined: informational row, or not measurable in this run. */
  met?: boolean;
  digits: number;
  /** Nothing to compare: the SDK server has no such feature (its columns print "n/a"). */
  gatewayOnly?: boolean;
}

function fmt(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

interface Results {
  blocking: PerServer<SendMessageLoadResult>;
  immediate: PerServer<SendMessageLoadResult>;
  streams: PerServer<StreamLoadResult>;
  idle: Partial<Record<ServerName, IdleSubscriberResult>>;
  /** Gateway only. */
  fanout?: Series<FanoutLoadResult>;
  /** `remote` (the gateway's a2a adapter in front of the SDK server) and `sdk` (that server called directly). */
  remote: PerServer<SendMessageLoadResult>;
  /** Gateway only. */
  push?: Series<PushLoadResult>;
  /** Gateway only (the store's scripts, no server). */
  replay?: ReplayMemoryResult;
  wait?: ReplicaWaitResult;
  /** `telemetry` (tracing on, metrics scraped) and `gateway` (tracing off), blocking SendMessage. */
  telemetry: PerServer<SendMessageLoadResult>;
  /** One connection: the SDK's blocking SendMessage, and the stages gateway's with its breakdown; the durable anchors'. */
  single: { sdk?: SendMessageLoadResult; stages?: StageBreakdown; anchors?: Partial<Record<ServerName, SendMessageLoadResult>> };
  /** Idle gateways' Redis traffic: `idle-redis` (this checkout), `idle-baseline`. */
  idleRedis: Partial<Record<ServerName, IdleRedisResult>>;
  /** One connection in alternating rounds (single): gateway, baseline, sdk. */
  oneConnection: PerServer<Costed<SendMessageLoadResult>>;
}

/**
 * The one-connection runs the headline compares: the side-by-side scenario's median rounds (single:
 * the gateway and the SDK in alternating rounds, in the same minutes, the gateway marking nothing)
 * when it ran; else the stages scenario's one run of each. Undefined when neither ran.
 */
function oneConnectionPair({ single, oneConnection }: Pick<Results, 'single' | 'oneConnection'>): { gateway?: SendMessageLoadResult; sdk?: SendMessageLoadResult; anchors?: Partial<Record<ServerName, SendMessageLoadResult>>; source: 'single' | 'stages' } | undefined {
  if (oneConnection.gateway?.median !== undefined) {
    const anchors: Partial<Record<ServerName, SendMessageLoadResult>> = {};
    for (const name of Object.values(ANCHOR_SERVER)) {
      const median = oneConnection[name]?.median;
      if (median !== undefined) anchors[name] = median;
    }
    return { gateway: oneConnection.gateway.median, sdk: oneConnection.sdk?.median, anchors, source: 'single' };
  }
  if (single.stages === undefined && single.sdk === undefined) return undefined;
  return { gateway: single.stages?.load, sdk: single.sdk, anchors: single.anchors, source: 'stages' };
}

/** Rows for the scenarios that ran (see BENCH_ONLY). */
function buildRows({ blocking, immediate, streams, idle, fanout, remote, push, replay, telemetry, single, oneConnection, wait }: Results): Row[] {
  const g = (v: number | undefined): number => v ?? Number.NaN;
  const bg = blocking.gateway?.median;
  const bs = blocking.sdk?.median;
  const ig = immediate.gateway?.median;
  const is = immediate.sdk?.median;
  const sg = streams.gateway?.median;
  const ss = streams.sdk?.median;
  const rows: Row[] = [];
  const add = (metric: string, gv: number, sv: number, digits: number, target = '', check?: (r: number, gv: number) => boolean): void => {
    const rt = ratio(gv, sv);
    const row: Row = { metric, gateway: gv, sdk: sv, ratio: rt, target, digits };
    if (check) {
      const met = check(rt, gv);
      // A check that cannot be evaluated (missing side) is left undefined, not "missed".
      if (target.startsWith('gateway') ? Number.isFinite(gv) : Number.isFinite(rt)) row.met = met;
    }
    rows.push(row);
  };
  const addGatewayOnly = (metric: string, gv: number, digits: number): void => {
    rows.push({ metric, gateway: gv, sdk: Number.NaN, ratio: Number.NaN, target: '', digits, gatewayOnly: true });
  };
  if (runs('blocking')) {
    add('blocking req/s', g(bg?.requestsPerSec), g(bs?.requestsPerSec), 0, 'ratio >= 1.0', (r) => r >= 1.0);
    add('blocking p50 ms', g(bg?.p50Ms), g(bs?.p50Ms), 1);
    add('blocking p99 ms', g(bg?.p99Ms), g(bs?.p99Ms), 1, 'ratio <= 1.5', (r) => r <= 1.5);
  }
  if (runs('immediate')) {
    add('returnImmediately req/s', g(ig?.requestsPerSec), g(is?.requestsPerSec), 0);
    // Needs the SDK's blocking figure: NaN ("-") when blocking was not run.
    add('returnImmediately req/s vs sdk blocking', g(ig?.requestsPerSec), g(bs?.requestsPerSec), 0, 'ratio >= 2.0', (r) => r >= 2.0);
    add('returnImmediately p50 ms', g(ig?.p50Ms), g(is?.p50Ms), 1);
    add('returnImmediately p99 ms', g(ig?.p99Ms), g(is?.p99Ms), 1);
  }
  if (runs('streams')) {
    add('streams/s', g(sg?.streamsPerSec), g(ss?.streamsPerSec), 0, 'ratio >= 1.0', (r) => r >= 1.0);
    add('stream first event p50 ms', g(sg?.firstEventP50Ms), g(ss?.firstEventP50Ms), 1);
    add('stream first event p99 ms', g(sg?.firstEventP99Ms), g(ss?.firstEventP99Ms), 1);
    add('stream last event p50 ms', g(sg?.lastEventP50Ms), g(ss?.lastEventP50Ms), 1);
    add('stream last event p99 ms', g(sg?.lastEventP99Ms), g(ss?.lastEventP99Ms), 1);
  }
  const one = oneConnectionPair({ single, oneConnection });
  if (one !== undefined) {
    add('one connection blocking p50 ms', g(one.gateway?.p50Ms), g(one.sdk?.p50Ms), 2, 'ratio <= 2.0', (r) => r <= 2.0);
    add('one connection blocking p99 ms', g(one.gateway?.p99Ms), g(one.sdk?.p99Ms), 2);
    add('one connection blocking req/s', g(one.gateway?.requestsPerSec), g(one.sdk?.requestsPerSec), 0);
  }
  if (runs('idle')) {
    add('idle subscriber KB (RSS)', g(idle.gateway?.kbPerSubscriber), g(idle.sdk?.kbPerSubscriber), 2, 'gateway < 12 KB', (_r, gv) => gv < 12);
    if (idle.gateway?.extraKbPerSubscriber !== undefined) {
      add('idle subscriber KB (Redis, server-wide)', idle.gateway.extraKbPerSubscriber, Number.NaN, 2);
    }
  }
  if (runs('telemetry')) {
    const on = telemetry.telemetry?.median;
    const off = telemetry.gateway?.median;
    // The verdicts come from the rounds' own on/off ratios (each pair ran back to back); the median rounds of either side are shown for reference.
    add('telemetry: on/off blocking req/s, median of round ratios', medianOf(telemetryRatios.rps), 1, 2, 'ratio >= 0.9', (r) => r >= 0.9);
    add('telemetry: on/off CPU per request, median of round ratios', medianOf(telemetryRatios.cpu), 1, 2, 'ratio <= 1.1', (r) => r <= 1.1);
    add('telemetry: tracing+metrics on vs off, blocking req/s', g(on?.requestsPerSec), g(off?.requestsPerSec), 0);
    add('telemetry: on vs off, blocking p50 ms', g(on?.p50Ms), g(off?.p50Ms), 1);
    add('telemetry: on vs off, blocking p99 ms', g(on?.p99Ms), g(off?.p99Ms), 1);
    add('telemetry: on vs off, CPU ms per request', telemetryCpu.on, telemetryCpu.off, 2);
  }
  if (runs('remote')) {
    const rg = remote.remote?.median;
    const rs = remote.sdk?.median;
    add('remote agent: via gateway (a2a) vs direct, req/s', g(rg?.requestsPerSec), g(rs?.requestsPerSec), 0);
    add('remote agent: via gateway vs direct, p50 ms', g(rg?.p50Ms), g(rs?.p50Ms), 1);
    add('remote agent: via gateway vs direct, p99 ms', g(rg?.p99Ms), g(rs?.p99Ms), 1);
  }
  if (runs('fanout')) {
    const fg = fanout?.median;
    addGatewayOnly('fan-out coordinators/s', g(fg?.coordinatorsPerSec), 1);
    addGatewayOnly('fan-out assignments/s', g(fg?.assignmentsPerSec), 0);
    addGatewayOnly('fan-out coordinator p50 ms', g(fg?.p50Ms), 1);
    addGatewayOnly('fan-out coordinator p99 ms', g(fg?.p99Ms), 1);
  }
  if (runs('push')) {
    const pg = push?.median;
    addGatewayOnly('push deliveries/s', g(pg?.deliveriesPerSec), 0);
    addGatewayOnly('push event-to-receiver p50 ms (half load)', g(pg?.latencyP50Ms), 1);
    addGatewayOnly('push event-to-receiver p99 ms (half load)', g(pg?.latencyP99Ms), 1);
  }
  if (runs('wait') && wait) {
    const medianOfRounds = (rounds: SendMessageLoadResult[], key: (r: SendMessageLoadResult) => number): number => medianOf(rounds.map(key));
    for (const [label, key, digits] of [['req/s', (r: SendMessageLoadResult) => r.requestsPerSec, 0], ['p50 ms', (r: SendMessageLoadResult) => r.p50Ms, 1], ['p99 ms', (r: SendMessageLoadResult) => r.p99Ms, 1]] as const) {
      addGatewayOnly(`WAIT off: blocking ${label} (1 replica, median round)`, medianOfRounds(wait.off, key), digits);
      addGatewayOnly(`WAIT on (redisWaitReplicas 1): blocking ${label}`, medianOfRounds(wait.on, key), digits);
    }
    addGatewayOnly('WAIT on: WAIT calls per request', wait.waitsPerRequest, 2);
  }
  if (runs('replay') && replay) {
    const at = (run: ReplayMemoryResult['trimmed'], index: number): number => g(run.samples.at(index)?.streamKb);
    const bound = replay.trimmed.bound.maxEvents;
    addGatewayOnly(`replay buffer KB of one open task, bound on (maxEvents ${bound}), at ${replay.trimmed.samples[1]?.events ?? '-'} events`, at(replay.trimmed, 1), 0);
    addGatewayOnly(`replay buffer KB of one open task, bound on, at ${replay.events} events`, at(replay.trimmed, -1), 0);
    addGatewayOnly(`replay buffer KB of one open task, bound off, at ${replay.events} events`, at(replay.untrimmed, -1), 0);
    addGatewayOnly('replay appends/s (one task, 16 in flight), bound on', replay.trimmed.appendsPerSec, 0);
    addGatewayOnly('replay appends/s (one task, 16 in flight), bound off', replay.untrimmed.appendsPerSec, 0);
  }
  return rows;
}

interface BaselineRow {
  metric: string;
  current: number;
  baseline: number;
  digits: number;
}

/** This checkout's gateway against the baseline's, from the same alternating rounds. */
function buildBaselineRows({ blocking, immediate, streams, idleRedis, oneConnection }: Results): BaselineRow[] {
  const rows: BaselineRow[] = [];
  const add = <T>(series: PerServer<T>, metric: string, key: (r: T) => number, digits: number): void => {
    const current = series.gateway?.median;
    const base = series.baseline?.median;
    if (current !== undefined && base !== undefined) rows.push({ metric, current: key(current), baseline: key(base), digits });
  };
  add(blocking, 'blocking req/s', (r) => r.requestsPerSec, 0);
  add(blocking, 'blocking p50 ms', (r) => r.p50Ms, 1);
  add(blocking, 'blocking p99 ms', (r) => r.p99Ms, 1);
  add(immediate, 'returnImmediately req/s', (r) => r.requestsPerSec, 0);
  add(immediate, 'returnImmediately p99 ms', (r) => r.p99Ms, 1);
  add(streams, 'streams/s', (r) => r.streamsPerSec, 0);
  add(streams, 'stream last event p50 ms', (r) => r.lastEventP50Ms, 1);
  add(streams, 'stream last event p99 ms', (r) => r.lastEventP99Ms, 1);
  add(oneConnection, 'one connection blocking p50 ms', (r) => r.p50Ms, 2);
  add(oneConnection, 'one connection blocking p99 ms', (r) => r.p99Ms, 2);
  // What a task costs: the median round's, as in the durable-anchors report.
  const cost = <T>(series: PerServer<Costed<T>>, metric: string, key: (c: Cost) => number | undefined, digits: number): void => {
    const current = medianCost(series.gateway?.rounds);
    const base = medianCost(series.baseline?.rounds);
    if (current !== undefined && base !== undefined) rows.push({ metric, current: key(current) ?? Number.NaN, baseline: key(base) ?? Number.NaN, digits });
  };
  cost(blocking, 'blocking CPU ms per task (gateway + workers + Redis)', (c) => c.cpuMsPerTask, 2);
  cost(blocking, 'blocking Redis calls per task', (c) => c.redis?.calls, 1);
  cost(streams, 'streams CPU ms per task (gateway + workers + Redis)', (c) => c.cpuMsPerTask, 2);
  cost(streams, 'streams Redis calls per task', (c) => c.redis?.calls, 1);
  cost(oneConnection, 'one connection CPU ms per task (gateway + workers + Redis)', (c) => c.cpuMsPerTask, 2);
  const idleNow = idleRedis['idle-redis'];
  const idleBase = idleRedis['idle-baseline'];
  if (idleNow !== undefined && idleBase !== undefined) rows.push({ metric: 'idle Redis commands/s', current: idleNow.commandsPerSec, baseline: idleBase.commandsPerSec, digits: 1 });
  return rows;
}

function renderBaselineTable(rows: readonly BaselineRow[]): string {
  const header = ['metric', 'this checkout', 'baseline', 'ratio'];
  const body = rows.map((r) => [r.metric, fmt(r.current, r.digits), fmt(r.baseline, r.digits), fmt(ratio(r.current, r.baseline), 2)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const line = (cells: readonly string[]): string => '| ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join(' | ') + ' |';
  return [line(header), '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|', ...body.map(line)].join('\n');
}

function renderTable(rows: readonly Row[]): string {
  const header = ['metric', 'gateway', 'sdk', 'ratio (gw/sdk)', 'target', 'status'];
  const body = rows.map((r) => [
    r.metric,
    fmt(r.gateway, r.digits),
    r.gatewayOnly ? 'n/a' : fmt(r.sdk, r.digits),
    r.gatewayOnly ? 'n/a' : fmt(r.ratio, 2),
    r.target,
    r.met === undefined ? (r.target ? '-' : '') : r.met ? 'met' : 'MISSED',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const line = (cells: readonly string[]): string =>
    '| ' + cells.map((c, i) => (i === 0 || i >= 4 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join(' | ') + ' |';
  const sep = '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|';
  return [line(header), sep, ...body.map(line)].join('\n');
}

function validityNotes({ blocking, immediate, streams, idle, fanout, remote, push, replay, telemetry }: Results): string[] {
  const notes: string[] = [];
  for (const [label, series] of [
    ['blocking', blocking],
    ['returnImmediately', immediate],
    ['remote', remote],
    ['telemetry', telemetry],
  ] as const) {
    for (const [name, s] of Object.entries(series)) {
      const bad = s.rounds.reduce((n, r) => n + r.badBodies + r.non2xx + r.errors + r.timeouts, 0);
      if (bad > 0) notes.push(`${label}/${name}: ${bad} failed or unexpected responses across rounds (excluded from req/s)`);
    }
  }
  for (const [name, s] of Object.entries(streams)) {
    const bad = s.rounds.reduce((n, r) => n + r.failed + r.incomplete, 0);
    if (bad > 0) notes.push(`streams/${name}: ${bad} streams failed or ended without COMPLETED (excluded)`);
  }
  for (const [name, r] of Object.entries(idle)) {
    if (r.established < r.requested) notes.push(`idle/${name}: only ${r.established}/${r.requested} subscribers established`);
    if (r.eventsWhileIdle > 0) notes.push(`idle/${name}: ${r.eventsWhileIdle} events arrived while idle`);
    if (!r.canceled) notes.push(`idle/${name}: the long task could not be canceled`);
  }
  if (runs('remote')) {
    notes.push(
      'remote rows: "gateway" is a second gateway process (gateway + workers, Redis) whose a2a adapter calls the SDK echo server; "sdk" is that server called directly; the SDK server runs in both, so the ratio is what the gateway in front costs',
    );
  }
  if (runs('telemetry')) {
    notes.push(
      `telemetry round ratios (on/off, rounds alternate on-first and off-first): req/s ${telemetryRatios.rps.map((r) => r.toFixed(2)).join(' ')}; CPU per request ${telemetryRatios.cpu.map((r) => r.toFixed(2)).join(' ')}`,
      `telemetry rows: "gateway" is a second gateway process with tracing on (OTLP http/protobuf to a local sink: ${telemetrySinkSummary}) and its /metrics scraped once a second on a metrics port; "sdk" is the plain gateway (tracing off; prom-client metrics are always kept, so they are in both)`,
    );
  }
  if (fanout) {
    notes.push('fan-out rows are gateway-only: the @a2a-js/sdk server has no sub-agent delegation, so there is no SDK figure or ratio');
    const failed = fanout.rounds.reduce((n, r) => n + r.failed, 0);
    if (failed > 0) notes.push(`fan-out: ${failed} coordinators did not complete all ${config.fanoutAssignments} assignments (excluded; listed below)`);
  }
  if (replay) {
    const series = (run: ReplayMemoryResult['trimmed']): string => run.samples.map((x) => `${x.events}:${x.streamKb.toFixed(0)}`).join(' ');
    notes.push(`replay buffer KB by events appended (events:KB), bound on: ${series(replay.trimmed)}`);
    notes.push(`replay buffer KB by events appended (events:KB), bound off: ${series(replay.untrimmed)}`);
    const hash = replay.trimmed.samples.at(-1)?.taskHashKb;
    if (hash !== undefined) notes.push(`task hash with the bound's bookkeeping: ${hash.toFixed(1)} KB at the end (flat: two fields)`);
  }
  if (push) {
    notes.push('push rows are gateway-only: the @a2a-js/sdk server sends each notification once, in process, with no queue to measure');
    const failed = push.rounds.reduce((n, r) => n + r.failed, 0);
    if (failed > 0) notes.push(`push: ${failed} tasks did not get each event exactly once, in order (listed below)`);
  }
  return notes;
}

// ---------- main ----------

/** What the telemetry scenario's sink and scraper saw, for the notes. */
let telemetrySinkSummary = 'not run';
/** Median CPU ms per blocking request of the telemetry scenario's servers (process tree: gateway and workers). */
let telemetryCpu = { on: Number.NaN, off: Number.NaN };
function medianOf(values: number[] | undefined): number {
  const sorted = [...(values ?? [])].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
/** Per round of the telemetry scenario: on/off ratios of req/s and of CPU per request. */
let telemetryRatios: { rps: number[]; cpu: number[] } = { rps: [], cpu: [] };

/** A one-connection run with its cost: each request is answered before the next, so none is cut off at the deadline. */
function oneConnectionCosted(s: BenchServer, run: () => Promise<SendMessageLoadResult>): Promise<Costed<SendMessageLoadResult>> {
  return withCost(
    costSources(s),
    async (begin) => {
      await begin();
      return run();
    },
    (r) => r.ok + r.badBodies,
  );
}

function fanoutRound(url: string, seconds: number): Promise<FanoutLoadResult> {
  return runFanoutLoad({
    url,
    coordinators: config.fanoutCoordinators,
    assignments: config.fanoutAssignments,
    maxParallel: FANOUT_MAX_PARALLEL,
    childText: FANOUT_CHILD_TEXT,
    seconds,
  });
}

async function main(): Promise<void> {
  if (config.only !== undefined && config.scenarios.every((sc) => sc === 'remote')) {
    throw new Error('remote needs both the SDK server and a gateway in front of it; drop --only');
  }
  if (config.only === 'sdk' && config.scenarios.every((sc) => sc === 'fanout')) {
    throw new Error('fanout is gateway-only (the SDK server has no sub-agent delegation); drop --only sdk');
  }
  // The SDK server is only needed for scenarios it can run (and as the remote agent).
  const needsSdk = config.scenarios.some((sc) => COMPARED.includes(sc)) || runs('remote');
  const needsGateway = config.scenarios.some((sc) => sc !== 'remote' && sc !== 'replay' && sc !== 'stages' && sc !== 'wait' && sc !== 'idle-redis');
  const names: ServerName[] = (config.only ? [config.only] : (['gateway', 'sdk'] as ServerName[])).filter((n) => (n === 'gateway' ? needsGateway : needsSdk));
  if (config.scenarios.includes('fanout') && !runs('fanout')) log('skipping fanout: it is gateway-only and --only sdk was given');
  log(`config: ${JSON.stringify(shownConfig)}`);
  const loadBefore = loadavg();
  mkdirSync(RESULTS_DIR, { recursive: true });

  for (const name of names) {
    log(`starting ${name}...`);
    const opts = { repoRoot: REPO_ROOT, logDir: RESULTS_DIR, redisUrl: config.redisUrl };
    servers[name] = name === 'gateway' ? await startGatewayOn({ ...opts, ownRedis: config.ownRedis }) : await startSdkServer(opts);
    const s = servers[name] as BenchServer;
    log(`${name} ready: pid ${s.pid}, ${s.jsonRpcUrl}${s.keyPrefix ? `, key prefix ${s.keyPrefix}` : ''}${s.redis ? `, own Redis ${s.redis.url} (pid ${s.redis.pid})` : ''}`);
  }
  // The durable anchors join the SDK server in the blocking, streams and one-connection runs.
  const anchors: ServerName[] = [];
  if (names.includes('sdk') && (['blocking', 'streams', 'stages', 'single'] as const).some((sc) => runs(sc))) {
    for (const anchor of config.anchors) {
      const name = ANCHOR_SERVER[anchor];
      log(`starting ${name} (the SDK server on its ${anchor} task store)...`);
      const s = await startAnchor(anchor, { repoRoot: REPO_ROOT, logDir: RESULTS_DIR, pgUrl: config.pgUrl, log });
      if (s === undefined) continue;
      servers[name] = s;
      anchors.push(name);
      log(`${name} ready: pid ${s.pid}, ${s.jsonRpcUrl}`);
    }
  }
  const order: Order = names; // gateway first, then sdk, every round
  // The baseline runs only the throughput scenarios, right after this checkout's gateway each round.
  const baselineRuns = config.baseline !== undefined && names.includes('gateway') && (['blocking', 'immediate', 'streams', 'single'] as const).some((sc) => runs(sc));
  const throughputOrder: Order = baselineRuns ? order.flatMap((n): ServerName[] => (n === 'gateway' ? ['gateway', 'baseline'] : [n])) : order;
  const anchorOrder: Order = [...throughputOrder, ...anchors];
  if (baselineRuns && config.baseline !== undefined) {
    log(`starting baseline (a gateway from ${config.baseline.dir}, ${config.baseline.commit})...`);
    servers.baseline = await startGatewayOn({ repoRoot: config.baseline.dir, logDir: RESULTS_DIR, redisUrl: config.redisUrl, name: 'baseline', ownRedis: config.ownRedis });
    log(`baseline ready: pid ${servers.baseline.pid}, ${servers.baseline.jsonRpcUrl}, key prefix ${servers.baseline.keyPrefix ?? ''}`);
  }
  if (runs('remote')) {
    const sdk = servers.sdk as BenchServer;
    log('starting remote (a gateway whose a2a adapter fronts the SDK server)...');
    servers.remote = await startGatewayOn({
      repoRoot: REPO_ROOT,
      logDir: RESULTS_DIR,
      redisUrl: config.redisUrl,
      ownRedis: config.ownRedis,
      name: 'remote',
      env: { A2A_ADAPTER: 'a2a', A2A_ADAPTER_OPTIONS: JSON.stringify({ url: sdk.baseUrl }) },
    });
    log(`remote ready: pid ${servers.remote.pid}, ${servers.remote.jsonRpcUrl}, key prefix ${servers.remote.keyPrefix ?? ''}`);
  }

  const stagesFile = join(RESULTS_DIR, 'stages.json');
  if (runs('stages') && config.only !== 'sdk') {
    log('starting stages (a gateway that marks each task\'s stages)...');
    servers.stages = await startGatewayOn({ repoRoot: REPO_ROOT, logDir: RESULTS_DIR, redisUrl: config.redisUrl, name: 'stages', env: { A2A_STAGE_MARKS_FILE: stagesFile }, ownRedis: config.ownRedis });
    log(`stages ready: pid ${servers.stages.pid}, ${servers.stages.jsonRpcUrl}, key prefix ${servers.stages.keyPrefix ?? ''}`);
  }

  let sink: TelemetrySink | undefined;
  let telemetryMetricsUrl = '';
  if (runs('telemetry')) {
    sink = await startTelemetrySink();
    const metricsPort = await freePort();
    telemetryMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    log('starting telemetry (a gateway with tracing on and a metrics port)...');
    servers.telemetry = await startGatewayOn({
      repoRoot: REPO_ROOT,
      logDir: RESULTS_DIR,
      redisUrl: config.redisUrl,
      ownRedis: config.ownRedis,
      name: 'telemetry',
      env: { A2A_OTLP_ENDPOINT: sink.url, A2A_METRICS_PORT: String(metricsPort) },
    });
    log(`telemetry ready: pid ${servers.telemetry.pid}, ${servers.telemetry.jsonRpcUrl}, OTLP to ${sink.url}, metrics at ${telemetryMetricsUrl}`);
  }

  // Idle cost: fresh gateways on Redis servers of their own, sent nothing (bench/load/idle-redis.ts).
  const idleRedis: Partial<Record<ServerName, IdleRedisResult>> = {};
  if (runs('idle-redis')) {
    const roots: Array<[ServerName, string]> = [['idle-redis', REPO_ROOT]];
    if (config.baseline !== undefined) roots.push(['idle-baseline', config.baseline.dir]);
    for (const [name, repoRoot] of roots) {
      await quiesce();
      const res = await runIdleRedis({ repoRoot, logDir: RESULTS_DIR, name, settleSeconds: config.idleSettleSeconds, seconds: config.idleSeconds, log });
      idleRedis[name] = res;
      log(`idle-redis ${name}: ${describeIdleRedis(res)}`);
    }
  }

  // 4. Idle subscribers first (see the header comment for why).
  const idle: Partial<Record<ServerName, IdleSubscriberResult>> = {};
  for (const name of runs('idle') ? order : []) {
    const s = servers[name] as BenchServer;
    await quiesce();
    log(`idle subscribers on ${name}: ${config.subscribers}`);
    const res = await runIdleSubscribers({
      url: s.jsonRpcUrl,
      readRssKb: () => rssKb(s.pid),
      subscribers: config.subscribers,
      log: (m) => log(`  ${name}: ${m}`),
      ...(name === 'gateway' ? { sampleExtraKb: () => redisUsedMemoryKb(s.redisUrl ?? config.redisUrl) } : {}),
    });
    idle[name] = res;
    log(
      `idle ${name}: RSS ${res.baselineRssKb} -> ${res.afterRssKb} KB, ${res.kbPerSubscriber.toFixed(2)} KB/subscriber` +
        (res.extraKbPerSubscriber !== undefined ? `, Redis ${res.extraKbPerSubscriber.toFixed(2)} KB/subscriber` : ''),
    );
  }

  // Warm-up of every measured path (JIT, connection pools, Redis scripts) — not reported, so
  // round 1 does not pay for compilation that later rounds get for free.
  if (config.warmupSeconds > 0) {
    for (const name of anchorOrder) {
      const url = (servers[name] as BenchServer).jsonRpcUrl;
      const seconds = config.warmupSeconds;
      const paths: Array<[Scenario, () => Promise<unknown>]> = [
        ['blocking', () => runSendMessageLoad({ url, connections: config.connections, seconds, returnImmediately: false })],
        ['immediate', () => runSendMessageLoad({ url, connections: config.connections, seconds, returnImmediately: true })],
        ['streams', () => runStreamLoad({ url, concurrency: config.streams, seconds })],
        ['single', () => runOneConnection(url, seconds)],
        ['fanout', () => (name === 'gateway' ? fanoutRound(url, seconds) : Promise.resolve())],
      ];
      const selected = paths.filter(([sc]) => runs(sc) && (sc !== 'fanout' || name === 'gateway') && (sc !== 'immediate' || !anchors.includes(name)));
      if (selected.length === 0) continue;
      log(`warm-up ${name} (${seconds} s per path: ${selected.map(([sc]) => sc).join(', ')})`);
      for (const [, warm] of selected) {
        await quiesce();
        await warm();
      }
    }
  }

  if (config.warmupSeconds > 0 && runs('remote')) {
    log(`warm-up remote (${config.warmupSeconds} s)`);
    await quiesce();
    await runSendMessageLoad({ url: (servers.remote as BenchServer).jsonRpcUrl, connections: config.connections, seconds: config.warmupSeconds, returnImmediately: false });
  }

  if (config.warmupSeconds > 0 && runs('telemetry')) {
    log(`warm-up telemetry (${config.warmupSeconds} s)`);
    await quiesce();
    await runSendMessageLoad({ url: (servers.telemetry as BenchServer).jsonRpcUrl, connections: config.connections, seconds: config.warmupSeconds, returnImmediately: false });
  }

  // With a baseline, every other round runs the servers in reverse order: the gateway and the
  // baseline come first equally often, so neither gains from the machine's drift within a round.
  const sideBySide = config.baseline !== undefined;
  // 1. Blocking SendMessage.
  const blocking: PerServer<Costed<SendMessageLoadResult>> = !runs('blocking')
    ? {}
    : await alternate(
        'blocking',
        anchorOrder,
        (s) =>
          withCost(
            costSources(s),
            async (begin) => {
              await begin();
              return runSendMessageLoad({ url: s.jsonRpcUrl, connections: config.connections, seconds: config.seconds, returnImmediately: false });
            },
            // autocannon drops the requests in flight at the deadline (one per connection); the
            // server still runs those tasks to the end, so they count.
            (r) => r.ok + r.badBodies + config.connections,
          ),
        (r) => r.requestsPerSec,
        (r) => `${describeSend(r)}${r.cost ? `; ${describeCost(r.cost)}` : ''}`,
        sideBySide,
      );
  // 2. returnImmediately SendMessage.
  const immediate: PerServer<SendMessageLoadResult> = !runs('immediate')
    ? {}
    : await alternate(
        'returnImmediately',
        throughputOrder,
        (s) => runSendMessageLoad({ url: s.jsonRpcUrl, connections: config.connections, seconds: config.seconds, returnImmediately: true }),
        (r) => r.requestsPerSec,
        describeSend,
        sideBySide,
      );
  // 3. Streaming.
  const streams: PerServer<Costed<StreamLoadResult>> = !runs('streams')
    ? {}
    : await alternate(
        'streams',
        anchorOrder,
        (s) => withCost(costSources(s), (begin) => runStreamLoad({ url: s.jsonRpcUrl, concurrency: config.streams, seconds: config.seconds, onStart: begin }), (r) => r.completed + r.incomplete),
        (r) => r.streamsPerSec,
        (r) => `${describeStreams(r)}${r.cost ? `; ${describeCost(r.cost)}` : ''}`,
        sideBySide,
      );

  // 4. One connection, side by side: a latency cut shows against the baseline in the same rounds.
  const oneConnection: PerServer<Costed<SendMessageLoadResult>> = !runs('single')
    ? {}
    : await alternate(
        'one connection',
        anchorOrder,
        (s) => oneConnectionCosted(s, () => runOneConnection(s.jsonRpcUrl, config.seconds)),
        (r) => r.p50Ms,
        (r) => `${describeSend(r)}${r.cost ? `; ${describeCost(r.cost)}` : ''}`,
        true,
      );

  // One connection, uncontended: the SDK's p50 and the stages gateway's, with its per-stage breakdown.
  const single: Results['single'] = {};
  if (runs('stages')) {
    const sdk = servers.sdk;
    if (sdk !== undefined) {
      await quiesce();
      if (config.warmupSeconds > 0) await runOneConnection(sdk.jsonRpcUrl, config.warmupSeconds);
      single.sdk = await oneConnectionCosted(sdk, () => runOneConnection(sdk.jsonRpcUrl, config.seconds));
      log(`one connection sdk: ${describeSend(single.sdk)}`);
    }
    for (const name of anchors) {
      const url = (servers[name] as BenchServer).jsonRpcUrl;
      await quiesce();
      if (config.warmupSeconds > 0) await runOneConnection(url, config.warmupSeconds);
      const res = await oneConnectionCosted(servers[name] as BenchServer, () => runOneConnection(url, config.seconds));
      (single.anchors ??= {})[name] = res;
      log(`one connection ${name}: ${describeSend(res)}`);
    }
    const stages = servers.stages;
    if (stages !== undefined) {
      await quiesce();
      single.stages = await runStageBreakdown({ url: stages.jsonRpcUrl, pid: stages.pid, file: stagesFile, seconds: config.seconds, warmupSeconds: config.warmupSeconds, around: (run) => oneConnectionCosted(stages, run) });
      log(`one connection stages gateway: ${describeSend(single.stages.load)}`);
    }
  }

  // 5. Fan-out, gateway only: nothing to alternate with, so its rounds run back to back (each
  // after the gateway has gone idle again), and the median round is reported like the others.
  let fanout: Series<FanoutLoadResult> | undefined;
  const gateway = servers.gateway;
  if (runs('fanout') && gateway) {
    fanout = { rounds: [] };
    for (let r = 1; r <= config.fanoutRounds; r++) {
      await quiesce();
      const res = await fanoutRound(gateway.jsonRpcUrl, config.fanoutSeconds);
      fanout.rounds.push(res);
      log(`fanout round ${r}/${config.fanoutRounds} gateway: ${describeFanout(res)}`);
      for (const f of res.failures.slice(0, 5)) log(`  fanout failure (worker ${f.worker}): ${f.reason}`);
    }
    const m = medianRound(fanout.rounds, (x) => x.coordinatorsPerSec);
    if (m !== undefined) fanout.median = m;
  }

  // 6. The gateway in front of a remote agent vs that agent called directly.
  const remote: PerServer<SendMessageLoadResult> = !runs('remote')
    ? {}
    : await alternate(
        'remote',
        ['remote', 'sdk'],
        (s) => runSendMessageLoad({ url: s.jsonRpcUrl, connections: config.connections, seconds: config.seconds, returnImmediately: false }),
        (r) => r.requestsPerSec,
        describeSend,
      );


  const cpuPerRequest: Partial<Record<ServerName, number[]>> = {};
  // 8. Telemetry on vs off: the same blocking load, alternating rounds; the "on" gateway is scraped while it runs.
  const telemetry: PerServer<SendMessageLoadResult> = !runs('telemetry')
    ? {}
    : await alternate(
        'telemetry',
        ['telemetry', 'gateway'],
        async (s) => {
          const scraper = s.name === 'telemetry' ? scrapeEvery(telemetryMetricsUrl) : undefined;
          const ticksBefore = cpuTicks(s.pid);
          try {
            const result = await runSendMessageLoad({ url: s.jsonRpcUrl, connections: config.connections, seconds: config.seconds, returnImmediately: false });
            // CPU per request is what telemetry adds; on a shared machine it is steadier than req/s.
            const cpuMsPerRequest = ((cpuTicks(s.pid) - ticksBefore) * 10) / Math.max(1, result.ok);
            (cpuPerRequest[s.name] ??= []).push(cpuMsPerRequest);
            log(`  ${s.name}: ${cpuMsPerRequest.toFixed(2)} CPU ms per request`);
            return result;
          } finally {
            const scrapes = scraper?.stop();
            if (scrapes !== undefined) log(`  telemetry: ${scrapes} scrapes of /metrics this round`);
          }
        },
        (r) => r.requestsPerSec,
        describeSend,
        true,
      );
  telemetryCpu = { on: medianOf(cpuPerRequest.telemetry), off: medianOf(cpuPerRequest.gateway) };
  if (runs('telemetry')) {
    // Each round's on/off pair ran back to back, so its ratio is the least disturbed by the
    // machine's drift; the median of those ratios is the figure to compare with the target.
    const on = telemetry.telemetry?.rounds ?? [];
    const off = telemetry.gateway?.rounds ?? [];
    const pairs = on.map((r, i) => ({ rps: r.requestsPerSec / (off[i]?.requestsPerSec ?? Number.NaN), cpu: (cpuPerRequest.telemetry?.[i] ?? Number.NaN) / (cpuPerRequest.gateway?.[i] ?? Number.NaN) }));
    telemetryRatios = { rps: pairs.map((p) => p.rps), cpu: pairs.map((p) => p.cpu) };
    for (const [i, p] of pairs.entries()) log(`telemetry round ${i + 1}: on/off req/s ${p.rps.toFixed(2)}, CPU per request ${p.cpu.toFixed(2)}`);
    log(`telemetry: median of round ratios: req/s ${medianOf(telemetryRatios.rps).toFixed(2)}, CPU per request ${medianOf(telemetryRatios.cpu).toFixed(2)}`);
  }
  if (sink !== undefined) {
    telemetrySinkSummary = `${sink.exports} exports, ${(sink.bytes / 1024 / 1024).toFixed(1)} MiB of spans received`;
    await sink.close();
  }

  // 7. Push delivery, gateway only, rounds back to back like fan-out.
  let push: Series<PushLoadResult> | undefined;
  if (runs('push') && gateway) {
    push = { rounds: [] };
    for (let r = 1; r <= config.pushRounds; r++) {
      await quiesce();
      const res = await runPushLoad({ url: gateway.jsonRpcUrl, senders: config.pushSenders, seconds: config.pushSeconds, redisUrl: gateway.redisUrl ?? config.redisUrl, keyPrefix: gateway.keyPrefix ?? '' });
      push.rounds.push(res);
      log(`push round ${r}/${config.pushRounds} gateway: ${describePush(res)}`);
      for (const f of res.failures.slice(0, 5)) log(`  push failure: ${f}`);
    }
    const m = medianRound(push.rounds, (x) => x.deliveriesPerSec);
    if (m !== undefined) push.median = m;
    if (push.rounds.some((r) => r.failed > 0)) process.exitCode = 1;
  }

  // 8. Replay buffer memory: the store's scripts only, no server.
  let replay: ReplayMemoryResult | undefined;
  if (runs('replay')) {
    log(`replay memory: ${config.replayEvents} events on one open task, bound on, then off`);
    replay = await runReplayMemory({ redisUrl: config.redisUrl, events: config.replayEvents, checkpoints: config.replayCheckpoints });
    log(`replay memory: bound on ${replay.trimmed.samples.at(-1)?.streamKb.toFixed(0)} KB, off ${replay.untrimmed.samples.at(-1)?.streamKb.toFixed(0)} KB`);
  }

  // 10. Cost of WAIT: two gateways of its own on a primary + replica of its own.
  let wait: ReplicaWaitResult | undefined;
  if (runs('wait')) {
    log('replica wait: blocking SendMessage, redisWaitReplicas 0 vs 1, on a primary + replica');
    wait = await runReplicaWait({ repoRoot: REPO_ROOT, logDir: RESULTS_DIR, connections: config.connections, seconds: config.seconds, rounds: config.rounds, warmupSeconds: config.warmupSeconds, log });
  }

  const results: Results = { blocking, immediate, streams, idle, remote, telemetry, single, idleRedis, oneConnection, ...(fanout ? { fanout } : {}), ...(push ? { push } : {}), ...(replay ? { replay } : {}), ...(wait ? { wait } : {}) };
  const rows = buildRows(results);
  const notes = validityNotes(results);
  const loadAfter = loadavg();
  // Load generator and servers already share this machine's cores; anything else running
  // (tests, builds) skews both sides unpredictably, so say so next to the figures.
  const cores = cpus().length;
  const busiest = Math.max(loadBefore[0] ?? 0, loadAfter[0] ?? 0, loadAfter[1] ?? 0);
  if (busiest > cores) {
    notes.push(`machine busy: load average up to ${busiest.toFixed(1)} on ${cores} CPUs — other processes competed; figures are noisy`);
  }

  const compared: string[] = [];
  if (runs('blocking') || runs('immediate') || runs('streams') || runs('remote')) {
    compared.push(`${config.seconds} s x ${config.rounds} rounds (median round)`);
    if (runs('blocking') || runs('immediate') || runs('remote')) compared.push(`${config.connections} connections`);
    if (runs('streams')) compared.push(`${config.streams} streams`);
  }
  if (runs('idle')) compared.push(`${config.subscribers} idle subscribers`);
  // Every server and the load run on the bench's own Node (child processes take its execPath).
  const runtime = `Node ${process.version}`;
  let title = compared.length > 0 ? `A2A gateway vs @a2a-js/sdk — ${[...compared, runtime].join(', ')}\n` : `A2A gateway — ${runtime}\n`;
  if (push) title += `push (gateway only): ${config.pushSenders} senders of "echo" tasks with a webhook config to a local receiver; ${config.pushSeconds} s x ${config.pushRounds} rounds (median round)\n`;
  if (fanout) {
    title +=
      `fan-out (gateway only): ${config.fanoutCoordinators} concurrent coordinators x ${config.fanoutAssignments} ` +
      `"${FANOUT_CHILD_TEXT}" assignments, maxParallel ${FANOUT_MAX_PARALLEL}, no review, blocking SendMessage; ` +
      `${config.fanoutSeconds} s x ${config.fanoutRounds} round${config.fanoutRounds === 1 ? '' : 's'} (median round)\n`;
  }
  process.stdout.write(`\n${title}\n`);
  process.stdout.write(renderTable(rows) + '\n');
  const baselineRows = config.baseline === undefined ? [] : buildBaselineRows(results);
  if (config.baseline !== undefined && baselineRows.length > 0) {
    process.stdout.write(`\nthis checkout vs baseline (${config.baseline.commit}), same rounds\n\n${renderBaselineTable(baselineRows)}\n`);
  }
  const one = oneConnectionPair(results);
  const anchorInputs = { blocking, streams, single: { gateway: one?.gateway, sdk: one?.sdk, ...one?.anchors }, idleRedis };
  const anchorRows = (['sdk', ...anchors] as ServerName[]).filter((n) => servers[n] !== undefined);
  const oneSource = one?.source === 'single' ? 'the median rounds of the side-by-side one-connection scenario' : "the stages gateway's run";
  if (anchorRows.length > 0 && (runs('blocking') || runs('streams') || runs('stages') || runs('single')) && (servers.gateway ?? servers.stages) !== undefined) {
    process.stdout.write(`\nDurable anchors: the gateway against the SDK server on each task store (gw/x = gateway / that server; 1-conn figures: ${oneSource})\n\n${renderAnchorTable(anchorInputs, anchorRows, config.ownRedis)}\n`);
  }
  // The one-connection run reported as the gateway's: oneConnectionPair's.
  const costed = [...new Set<ServerName>(['gateway', ...(Object.keys(servers) as ServerName[])])];
  if (runs('blocking') || runs('streams') || runs('stages') || runs('idle-redis')) process.stdout.write('\n' + renderCostLines(anchorInputs, costed) + '\n');
  if (runs('blocking') || runs('streams') || runs('single') || runs('idle-redis')) process.stdout.write('\n' + renderSpeedTargets(anchorInputs, cores) + '\n');
  if (single.stages !== undefined) process.stdout.write('\n' + renderStages(single.stages) + '\n');
  if (notes.length > 0) process.stdout.write('\nNotes:\n' + notes.map((n) => `  - ${n}`).join('\n') + '\n');
  if (fanout) {
    // Every coordinator is checked, not just counted: one that lost an assignment is a bug.
    const sent = fanout.rounds.reduce((n, r) => n + r.sent, 0);
    const ok = fanout.rounds.reduce((n, r) => n + r.completed, 0);
    const failed = fanout.rounds.reduce((n, r) => n + r.failed, 0);
    const failures = fanout.rounds.flatMap((r, i) => r.failures.map((f) => `round ${i + 1}, worker ${f.worker}: ${f.reason}`));
    const shown = failures.slice(0, 20);
    const rounds = fanout.rounds.length;
    process.stdout.write(
      `\nFan-out check: ${ok}/${sent} timed coordinators ended COMPLETED with completed == ${config.fanoutAssignments} ` +
        `(${ok * config.fanoutAssignments} assignments) across ${rounds} round${rounds === 1 ? '' : 's'}; ` +
        `${failed} failed (priming calls included)` +
        (shown.length > 0 ? ':\n' + shown.map((f) => `  - ${f}`).join('\n') : '') +
        (failed > shown.length ? `\n  - … ${failed - shown.length} more (up to 100 per round kept in latest.json)` : '') +
        '\n',
    );
    if (failed > 0) process.exitCode = 1;
  }

  const report = {
    generatedAt: new Date().toISOString(),
    config: shownConfig,
    environment: {
      node: process.version,
      cpus: cores,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      loadavgBefore: loadBefore,
      loadavgAfter: loadAfter,
    },
    servers: Object.fromEntries(Object.values(servers).map((s) => [s.name, { pid: s.pid, url: s.jsonRpcUrl, keyPrefix: s.keyPrefix }])),
    ...(config.baseline !== undefined ? { baselineTable: baselineRows.map((r) => ({ metric: r.metric, current: round(r.current, 3), baseline: round(r.baseline, 3), ratio: round(ratio(r.current, r.baseline), 3) })) } : {}),
    table: rows.map((r) => ({
      metric: r.metric,
      gateway: round(r.gateway, 3),
      sdk: round(r.sdk, 3),
      ratio: round(r.ratio, 3),
      target: r.target || null,
      met: r.met ?? null,
    })),
    results: { blocking, returnImmediately: immediate, streams, idleSubscribers: idle, remote, telemetry, single, idleRedis, oneConnection, ...(fanout ? { fanout } : {}), ...(push ? { push } : {}), ...(replay ? { replay } : {}), ...(wait ? { wait } : {}) },
    notes,
  };
  const outPath = join(RESULTS_DIR, 'latest.json');
  // NaN is not JSON; null keeps "not measured" distinguishable from 0.
  writeFileSync(outPath, JSON.stringify(report, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n');
  process.stdout.write(`\nwrote ${outPath}\n`);
}

main()
  .catch((err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    if (shuttingDown) return;
    shuttingDown = true;
    await stopAll();
    log(servers.gateway ? 'servers stopped, gateway Redis keys removed' : 'servers stopped');
  });

