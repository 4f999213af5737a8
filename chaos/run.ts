// `npm run chaos`: fault injection against real processes. Starts its own redis-server (AOF,
// fsync on every write), several gateways and workers on it, drives a steady, seeded load of
// "transfer <k>" tasks whose charges go to a ledger file, keeps SSE streams open, and while
// that runs SIGKILLs random workers and gateways and crashes Redis. Then it checks what the
// issue promises (see report.ts) and prints the table; exit code 1 when a promise broke.
//
// Env: CHAOS_TASKS (200), CHAOS_REMOTE_TASKS (20: tasks for a real downstream A2A agent behind the
// gateway's `remote` agent), CHAOS_MODEL_TASKS (20: tasks for a local OpenAI-compatible server
// behind its `model` agent), CHAOS_COORDINATORS (20: "fanout" coordinators, each with three
// "transfer <1..3>" sub-agent tasks, interleaved with the transfers; 0 = none), CHAOS_SEED (1),
// CHAOS_GATEWAYS (2), CHAOS_WORKERS (3),
// CHAOS_PUSH_SHARE (0.3: share of the transfers that register push configs for the harness's
// webhook receivers, some flaky and taken down during the faults; 0 = no push),
// CHAOS_STEP_MS (30), CHAOS_INTERVAL_MS (100, mean pause between submissions),
// CHAOS_ANCHORS (3), CHAOS_FAULTS (e.g. "redis" or "worker,gateway": the kinds drawn after the
// first three faults, which are always one of each), CHAOS_REDIS_DOWN_MS ("300,3000": how long
// a crashed Redis stays down), CHAOS_KEEP=1 keeps the temp dir (Redis data, logs, ledger; a
// failed run always keeps it).
// CHAOS_CLUSTER=1 (`npm run chaos:cluster`): the same on a Redis Cluster of its own (3 masters,
// 3 replicas); the Redis fault is then a master's SIGKILL, its failover, and the node's return
// as a new node (old id forgotten, no nodes.conf) replicating the promoted one. CHAOS_WAIT_REPLICAS (1 on a Cluster, 0 otherwise): the processes'
// redisWaitReplicas; 0 measures what a failover loses without WAIT.
// CHAOS_PROFILE: shipped (default), long (five times the load), hour (an hour of mixed load
// and a fault every ~3.5 s: over 1,000 process kills, 1,051 in the latest Cluster run; with
// CHAOS_CLUSTER=1 Redis masters among them).
// Imported, `runChaos(options)` does the same and returns the numbers (test/chaos.test.ts).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { buildCompiledSources, COMPILED_SOURCES_ENV, removeCompiledSources } from '../test/support/compiled-sources.ts';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Cluster, Redis } from 'ioredis';
import type { RedisClient } from '../src/redis/connection.ts';
import { scanKeys } from '../src/redis/cross-slot.ts';
import { RedisKeys } from '../src/store/keys.ts';
import { loadOrCreatePrivateJwk, publicJwkOf } from '../src/auth/keys/key-file.ts';
import { agentsConfig, checkBackends, runBackendLoad, startBackends, type BackendLoad, type Backends } from './backends.ts';
import { fetchAssignments, type AssignmentListing } from './coordinators.ts';
import { FaultInjector, type FaultKind } from './faults.ts';
import { runLoad, submitWithRetry, transferMessage, type LoadResult } from './load.ts';
import { ProcessGroup } from './processes.ts';
import { chaosPushSettings, CHAOS_FLAKINESS, createConfigWithRetry, planPush, PushReceivers, sendConfigOf, type PushPlanEntry, type PushRegistration } from './push.ts';
import { settleAndJudgePush, type ChaosPushResult } from './push-report.ts';
import { seededRandom } from './random.ts';
import { startRedisServer, type RedisServer } from './redis-server.ts';
import { startChaosCluster, type ChaosCluster } from './redis-cluster.ts';
import { buildReport, SINGLE_REDIS_SETUP, type ChaosResult } from './report.ts';
import { formatReport } from './table.ts';
import { StreamWatcher } from './streams.ts';
import { GenerationSampler, type GenerationReport } from './generations.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

export interface ChaosOptions {
  tasks: number;
  /** Tasks for the `remote` agent (a real downstream A2A agent behind the gateway); 0 = no downstream. */
  remoteTasks: number;
  /** Tasks for the `model` agent (a local OpenAI-compatible server behind the gateway); 0 = none. */
  modelTasks: number;
  /** Fanout coordinators (3 transfer sub-agents each) interleaved with the transfers. */
  coordinators: number;
  seed: number;
  gateways: number;
  workers: number;
  /** Demo adapter stepMs: the pause after each charge, i.e. the crash window of a step. */
  stepMs: number;
  /** Mean pause between two submissions (ms). */
  intervalMs: number;
  /** Pause before each fault, uniform in [min, max] ms. */
  faultPauseMs: [number, number];
  redisDownMs: [number, number];
  /** Faults after the first three (one of each kind) are drawn from this list; repeat a kind to weigh it. */
  faultMix: FaultKind[];
  /** Dialogue tasks kept open (input-required) with a stream each until the faults are over. */
  anchors: number;
  /** Share of load tasks that get a SubscribeToTask stream. */
  streamShare: number;
  /** Share of the transfers that register push configs (on SendMessage, created later, or both); 0 = no push. */
  pushShare: number;
  /** Webhook receivers the harness runs, and how many of them are flaky (misbehave now and then, go down during the faults). */
  pushReceivers: number;
  flakyPushReceivers: number;
  /** The gateways' push.timeoutMs (a flaky receiver's hang outlasts it). */
  pushTimeoutMs: number;
  /** Pause between two receiver outages, and how long one lasts (uniform in [min, max] ms). */
  receiverOutagePauseMs: [number, number];
  receiverDownMs: [number, number];
  /** After the tasks are terminal: how long push deliveries may take to arrive. */
  pushSettleTimeoutMs: number;
  /** After the faults: how long tasks may take to become terminal, streams to end. */
  settleTimeoutMs: number;
  /** Hard bound on the fault phase. */
  maxFaultPhaseMs: number;
  /**
   * Start killed roles' replacements in the background, so the next fault need not wait for
   * them; on a Cluster also a killed master's down period and rejoin (one master down at a time).
   */
  overlapRespawns: boolean;
  /** Run on a Redis Cluster of its own (3 masters, 3 replicas) instead of one redis-server. */
  cluster: boolean;
  /** The processes' redisWaitReplicas. */
  waitReplicas: number;
  keepTemp: boolean;
  log: (line: string) => void;
}

export const DEFAULT_CHAOS_OPTIONS: ChaosOptions = {
  tasks: 200,
  remoteTasks: 20,
  modelTasks: 20,
  coordinators: 20,
  seed: 1,
  gateways: 2,
  workers: 3,
  stepMs: 30,
  intervalMs: 100,
  faultPauseMs: [1_000, 3_000],
  // Up to longer than the 2 s lock: turns whose worker went silent are handed to another one.
  redisDownMs: [300, 3_000],
  // Worker kills are the commonest real fault; Redis restarts find the most bugs.
  faultMix: ['worker', 'worker', 'worker', 'gateway', 'gateway', 'redis', 'redis'],
  anchors: 3,
  streamShare: 0.5,
  pushShare: 0.3,
  pushReceivers: 3,
  flakyPushReceivers: 2,
  pushTimeoutMs: 2_000,
  receiverOutagePauseMs: [1_500, 4_000],
  receiverDownMs: [1_000, 6_000],
  pushSettleTimeoutMs: 120_000,
  settleTimeoutMs: 90_000,
  maxFaultPhaseMs: 240_000,
  overlapRespawns: false,
  cluster: false,
  waitReplicas: 0,
  keepTemp: false,
  log: () => undefined,
};

/**
 * The long configuration (`npm run chaos:long`): five times the load and three workers more,
 * so faults land on many more turns in flight, coordinators' resumptions and sub-agent waits.
 */
export const LONG_CHAOS_OPTIONS: ChaosOptions = {
  ...DEFAULT_CHAOS_OPTIONS,
  tasks: 1_000,
  remoteTasks: 100,
  modelTasks: 100,
  coordinators: 100,
  workers: 6,
  maxFaultPhaseMs: 900_000,
  settleTimeoutMs: 240_000,
};

/**
 * An hour of mixed load (transfers at ~2.5 a second with fanout coordinators interleaved, then
 * remote and model tasks alongside), a load this machine's workers keep up with while faulted,
 * with a fault every 2–3 s, worker kills weighed highest, replacements (and on a Cluster a
 * killed master's rejoin) in the background: over 1,000 process kills (workers, gateways,
 * Redis: crashes, or on a Cluster master kills) before the load ends.
 *
 * The pause, for the Cluster run: the load lasts 9,000 × 400 ms = 3,600 s, so the profile needs
 * a fault every 3.6 s or less, kills being most of them (a gateway draw kills nothing while the
 * other gateway is still starting). Before, the loop also waited out each master's down period
 * and rejoin (~12 s a master kill): 964 kills at pauses of 0.8–2.4 s. Now it waits for a
 * master's failover only (~4 s), and with pauses of 1.0–2.9 s the latest run made 1,051 kills
 * in 3,744 s (656 workers, 223 gateways, 172 masters): over the bound, by 5 %, on a machine also
 * running other work for its first half hour.
 */
export const HOUR_CHAOS_OPTIONS: ChaosOptions = {
  ...DEFAULT_CHAOS_OPTIONS,
  tasks: 9_000,
  remoteTasks: 300,
  modelTasks: 300,
  coordinators: 450,
  intervalMs: 400,
  workers: 4,
  faultPauseMs: [1_000, 2_900],
  faultMix: ['worker', 'worker', 'worker', 'worker', 'gateway', 'gateway', 'redis'],
  overlapRespawns: true,
  maxFaultPhaseMs: 4_200_000,
  settleTimeoutMs: 600_000,
};

const PROFILES: Record<string, ChaosOptions> = { shipped: DEFAULT_CHAOS_OPTIONS, long: LONG_CHAOS_OPTIONS, hour: HOUR_CHAOS_OPTIONS };

/** PIDs in the lease holders' worker ids ("<host>:<pid>:<suffix>"): the workers running a turn now. */
async function busyWorkerPids(redis: RedisClient, prefix: string): Promise<Set<number>> {
  const pids = new Set<number>();
  for await (const batch of scanKeys(redis, `${prefix}:{*}:lease`, 1000)) {
    // One GET per key: on a Cluster the leases are in many slots.
    const holders = await Promise.all(batch.map((key) => redis.get(key)));
    for (const holder of holders) {
      const pid = /:(\d+):[^:]*$/.exec(holder ?? '')?.[1];
      if (pid !== undefined) pids.add(Number(pid));
    }
  }
  return pids;
}

/** Polls the task states (bounded) until every id is terminal; returns the ids that are not. */
async function waitTerminal(redis: RedisClient, keys: RedisKeys, taskIds: string[], timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let open = taskIds;
  while (open.length > 0 && Date.now() < deadline) {
    const states = await Promise.all(open.map((id) => redis.hget(keys.task(id).task, 'state')));
    open = open.filter((_, i) => !TERMINAL.has(states[i] ?? ''));
    if (open.length > 0) await sleep(250);
  }
  return open;
}

export async function runChaos(partial: Partial<ChaosOptions> = {}): Promise<ChaosResult> {
  const o: ChaosOptions = { ...DEFAULT_CHAOS_OPTIONS, ...partial };
  const started = Date.now();
  const log = (line: string): void => o.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${line}`);
  const random = seededRandom(o.seed);
  const base = mkdtempSync(join(tmpdir(), 'a2a-chaos-'));
  const logDir = join(base, 'logs');
  const redisDir = join(base, 'redis');
  mkdirSync(logDir);
  mkdirSync(redisDir);
  const ledgerFile = join(base, 'ledger.txt');
  // Gateways and workers start from plain JS transpiled once for this run (ProcessGroup.spawn),
  // unless the caller built it already (the test suite's run does, for test/chaos.test.ts).
  const compiled = process.env[COMPILED_SOURCES_ENV] ? undefined : buildCompiledSources().dir;
  if (compiled !== undefined) process.env[COMPILED_SOURCES_ENV] = compiled;
  const prefix = 'chaos';
  const keys = new RedisKeys(prefix);

  let redisServer: RedisServer | undefined;
  let redisCluster: ChaosCluster | undefined;
  let group: ProcessGroup | undefined;
  let redis: RedisClient | undefined;
  let watcher: StreamWatcher | undefined;
  let generationSampler: GenerationSampler | undefined;
  let injector: FaultInjector | undefined;
  let faulting: Promise<void> | undefined;
  let result: ChaosResult | undefined;
  let backends: Backends | undefined;
  let receivers: PushReceivers | undefined;
  let outaging: Promise<void> | undefined;
  try {
    const demoOptions = { stepMs: o.stepMs, ledgerFile };
    const agentsEnv: Record<string, string> = {};
    const fileConfig: Record<string, unknown> = {};
    if (o.remoteTasks > 0 || o.modelTasks > 0) {
      backends = await startBackends(ROOT, base);
      log(`backends: downstream A2A agent at ${backends.downstreamUrl}, model at ${backends.modelBaseUrl}`);
      Object.assign(fileConfig, agentsConfig(backends, demoOptions));
    }
    if (o.pushShare > 0) {
      // One webhook key for every gateway and worker; the receivers check signatures against it.
      const keyFile = join(base, 'push-signing-key.json');
      const key = await loadOrCreatePrivateJwk(keyFile, { alg: 'EdDSA', use: 'sig' });
      agentsEnv['A2A_PUSH_SIGNING_KEY_FILE'] = keyFile;
      fileConfig['push'] = chaosPushSettings(o.pushTimeoutMs);
      receivers = await PushReceivers.start({
        count: Math.max(1, o.pushReceivers),
        flaky: o.flakyPushReceivers,
        publicKeys: [publicJwkOf(key)],
        random: random.fork('push-receivers'),
        flakiness: CHAOS_FLAKINESS,
        gatewayTimeoutMs: o.pushTimeoutMs,
      });
      log(`push receivers: ${receivers.receivers.map((r) => `${r.name} ${r.receiver.url}`).join(', ')}`);
    }
    if (Object.keys(fileConfig).length > 0) {
      const configFile = join(base, 'config.json');
      writeFileSync(configFile, JSON.stringify(fileConfig));
      agentsEnv['A2A_CONFIG'] = configFile;
    }
    let redisEnv: Record<string, string>;
    let redisFault: { server: RedisServer } | { cluster: ChaosCluster };
    if (o.cluster) {
      redisCluster = await startChaosCluster();
      log(`Redis Cluster (3 masters, 3 replicas) at ${redisCluster.seeds}, redisWaitReplicas ${o.waitReplicas}`);
      redisEnv = { A2A_REDIS_CLUSTER_NODES: redisCluster.seeds };
      redisFault = { cluster: redisCluster };
      const seeds = redisCluster.seeds.split(',').map((seed) => ({ host: '127.0.0.1', port: Number(seed.slice(seed.lastIndexOf(':') + 1)) }));
      redis = new Cluster(seeds, { clusterRetryStrategy: (n) => Math.min(n * 100, 1_000), redisOptions: { maxRetriesPerRequest: null } });
    } else {
      redisServer = await startRedisServer(redisDir);
      log(`redis-server on port ${redisServer.port}, data in ${redisDir}`);
      redisEnv = { A2A_REDIS_URL: redisServer.url };
      redisFault = { server: redisServer };
      redis = new Redis(redisServer.url, { maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(n * 100, 1_000) });
    }
    redis.on('error', () => undefined); // it reconnects; the report reads only after the faults
    group = new ProcessGroup({
      root: ROOT,
      logDir,
      env: {
        ...redisEnv,
        A2A_REDIS_WAIT_REPLICAS: String(o.waitReplicas),
        A2A_KEY_PREFIX: prefix,
        A2A_LOG_LEVEL: 'warn',
        A2A_LOCK_DURATION_MS: '2000',
        A2A_STALLED_INTERVAL_MS: '1000',
        A2A_ADAPTER: 'demo',
        // The chaos load is one anonymous caller far past any per-principal limit.
        A2A_AUTH_ENABLED: 'false',
        A2A_RATE_LIMIT_PER_SECOND: '0',
        A2A_MAX_ACTIVE_TASKS: '0',
        // Nor its streams, parallel lists or stored bytes (one caller stands for many).
        A2A_MAX_STREAMS_PER_OWNER: '0',
        A2A_MAX_CONCURRENT_LISTS_PER_OWNER: '0',
        A2A_MAX_STORED_BYTES: '0',
        A2A_MAX_STORED_TASKS: '0',
        A2A_ADAPTER_OPTIONS: JSON.stringify(demoOptions),
        ...agentsEnv,
      },
    });
    const processes = group;
    const client = redis;
    injector = new FaultInjector({
      busyWorkerPids: () => busyWorkerPids(client, prefix),
      group: processes,
      redis: redisFault,
      random: random.fork('faults'),
      targets: { serve: o.gateways, worker: o.workers },
      pauseMs: o.faultPauseMs,
      redisDownMs: o.redisDownMs,
      mix: o.faultMix,
      overlapRespawns: o.overlapRespawns,
      log,
    });
    const faults = injector;
    await faults.replenish();
    const gateways = (): string[] => processes.gatewayUrls();
    const streams = new StreamWatcher({ gateways, random: random.fork('streams') });
    watcher = streams;

    // Anchors: dialogue tasks that wait for input, so their streams stay open across every fault.
    const anchorRandom = random.fork('anchors');
    const anchors: string[] = [];
    for (let i = 0; i < o.anchors; i++) {
      const sent = await submitWithRetry({ messageId: `chaos-${o.seed}-anchor-${i}`, role: 'ROLE_USER', parts: [{ text: 'dialogue' }] }, gateways, anchorRandom, 30_000, () => undefined);
      if (sent === undefined || 'refused' in sent) throw new Error(`could not start anchor task ${i}: ${JSON.stringify(sent)}`);
      anchors.push(sent.taskId);
      streams.watch(sent.taskId, 'anchor');
    }
    // Task generations: tasks read now and then through random gateways while the faults land.
    const sampledIds: string[] = [...anchors];
    const transferIds = new Set<string>();
    generationSampler = new GenerationSampler({ gateways, tasks: () => sampledIds, random: random.fork('generations'), perRound: 6, pauseMs: 100 });
    generationSampler.start();

    log(`load: ${o.tasks} transfers, ~${o.intervalMs} ms apart, ${o.coordinators} coordinators, ${o.gateways} gateways, ${o.workers} workers, seed ${o.seed}`);
    let loadOver = false;
    let faultsOver = false;
    const loadRandom = random.fork('load');
    // Push: transfer i's configs are planned from its own fork, so the load's choices do not move.
    const pushPlans = new Map<number, PushPlanEntry>();
    const registrations: PushRegistration[] = [];
    const creating: Promise<void>[] = [];
    const pushRetries: Record<string, number> = {};
    const pushReceivers = receivers;
    const configurationFor = (index: number): Record<string, unknown> | undefined => {
      if (pushReceivers === undefined) return undefined;
      const plan = planPush(random.fork(`push-${index}`), o.pushShare, pushReceivers.receivers);
      if (plan === undefined) return undefined;
      pushPlans.set(index, plan);
      return plan.send ? { taskPushNotificationConfig: sendConfigOf(plan, index, pushReceivers.receivers).config } : undefined;
    };
    const registerPush = (index: number, taskId: string): void => {
      const plan = pushPlans.get(index);
      if (plan === undefined || pushReceivers === undefined) return;
      if (plan.send) registrations.push({ ...sendConfigOf(plan, index, pushReceivers.receivers).registration, taskId });
      if (plan.create) {
        creating.push(
          createConfigWithRetry({
            plan,
            taskIndex: index,
            taskId,
            receivers: pushReceivers.receivers,
            gateways: () => processes.gatewayUrls(),
            random: random.fork(`push-create-${index}`),
            redis: client,
            keys,
            onRetry: (cause) => {
              pushRetries[cause] = (pushRetries[cause] ?? 0) + 1;
            },
          }).then((registration) => {
            registrations.push(registration);
          }),
        );
      }
    };
    const loading = runLoad({
      tasks: o.tasks,
      seed: o.seed,
      random: loadRandom,
      intervalMs: o.intervalMs,
      gateways,
      configurationFor,
      onSubmitted: (task) => {
        sampledIds.push(task.taskId);
        transferIds.add(task.taskId);
        if (random.fork(`watch-${task.index}`).chance(o.streamShare)) streams.watch(task.taskId, 'transfer');
        registerPush(task.index, task.taskId);
      },
      coordinators: o.coordinators,
      onCoordinatorSubmitted: (coordinator) => {
        // A coordinator's stream stays open while it is parked for its assignments.
        if (random.fork(`watch-coordinator-${coordinator.index}`).chance(o.streamShare)) streams.watch(coordinator.taskId, 'coordinator');
      },
    }).finally(() => {
      loadOver = true;
    });
    const backendRetries: Record<string, number> = {};
    const backendLoading = runBackendLoad({
      remoteTasks: backends === undefined ? 0 : o.remoteTasks,
      modelTasks: backends === undefined ? 0 : o.modelTasks,
      seed: o.seed,
      random: random.fork('backends'),
      intervalMs: o.intervalMs,
      gateways,
      onRetry: (cause) => {
        backendRetries[cause] = (backendRetries[cause] ?? 0) + 1;
      },
    });
    faulting = faults.run(() => loadOver, Date.now() + o.maxFaultPhaseMs).finally(() => {
      faultsOver = true;
    });
    // Receivers go down now and then while the processes and Redis do.
    outaging = receivers?.runOutages(() => faultsOver, random.fork('receiver-outages'), o.receiverOutagePauseMs, o.receiverDownMs, log);
    const [load, backendLoad] = (await Promise.all([loading, backendLoading, faulting, outaging])) as [LoadResult, BackendLoad, void, void];
    for (const [cause, n] of Object.entries(backendRetries)) load.retriesByCause[cause] = (load.retriesByCause[cause] ?? 0) + n;
    await Promise.all(creating);
    for (const [cause, n] of Object.entries(pushRetries)) load.retriesByCause[cause] = (load.retriesByCause[cause] ?? 0) + n;
    if (backendLoad.tasks.length > 0) log(`backend load done: ${backendLoad.tasks.length} remote and model tasks submitted`);
    log(`load done: ${load.submitted.length} transfers, ${load.coordinators.length} coordinators submitted; faults: ${JSON.stringify(faults.counts)}`);
    await faults.replenish();

    // The faults are over: answer the anchors so their dialogues (and streams) can finish.
    for (const [i, taskId] of anchors.entries()) {
      await submitWithRetry(transferMessage(`chaos-${o.seed}-anchor-${i}-answer`, 'Ada', taskId), gateways, anchorRandom, 30_000, () => undefined);
    }
    const settleStarted = Date.now();
    const open = await waitTerminal(
      redis,
      keys,
      [...load.submitted.map((t) => t.taskId), ...anchors, ...load.coordinators.map((c) => c.taskId), ...backendLoad.tasks.map((t) => t.taskId)],
      o.settleTimeoutMs,
    );
    log(open.length === 0 ? 'every task is terminal' : `${open.length} tasks still not terminal after ${o.settleTimeoutMs} ms`);
    // The coordinators' children, as the gateway lists them; a terminal coordinator's are settled
    // already, the rest get what is left of the settle time.
    const listings = new Map<string, AssignmentListing>();
    const listRandom = random.fork('assignments');
    for (const coordinator of load.coordinators) {
      listings.set(coordinator.taskId, await fetchAssignments(gateways, coordinator.taskId, listRandom.fork(coordinator.taskId)));
    }
    const childIds = [...listings.values()].flatMap((l) => ('error' in l ? [] : l.assignments.map((a) => a.taskId)));
    const openChildren = await waitTerminal(redis, keys, childIds, Math.max(1_000, o.settleTimeoutMs - (Date.now() - settleStarted)));
    if (load.coordinators.length > 0) {
      log(`${childIds.length} child tasks listed for ${load.coordinators.length} coordinators${openChildren.length === 0 ? ', all terminal' : `, ${openChildren.length} not terminal`}`);
    }
    await streams.finish(open.length === 0 && openChildren.length === 0 ? 15_000 : 1_000);
    await generationSampler.stop();
    const generations: GenerationReport = await generationSampler.judge(redis, keys, transferIds);
    let push: ChaosPushResult | undefined;
    if (pushReceivers !== undefined) {
      const judged = await settleAndJudgePush({
        redis,
        keys,
        registrations,
        deliveriesByPath: () => pushReceivers.deliveriesByPath(),
        gateway: () => processes.gatewayUrls()[0],
        timeoutMs: o.pushSettleTimeoutMs,
        log,
      });
      const flaky = pushReceivers.receivers.filter((r) => r.flaky).length;
      push = { ...judged, receivers: `${pushReceivers.receivers.length} (${flaky} flaky)`, outages: pushReceivers.outages, misbehaviour: pushReceivers.misbehaviour };
    }

    result = await buildReport({
      generations,
      redis,
      prefix,
      seed: o.seed,
      tasksRequested: o.tasks,
      load,
      anchors,
      coordinatorsRequested: o.coordinators,
      assignmentListings: listings,
      streams: streams.records,
      ledgerFile,
      faults: faults.counts,
      unexpectedExits: processes.unexpectedExits,
      durationMs: Date.now() - started,
      redisSetup: o.cluster ? `Redis Cluster, 3 masters + 3 replicas (cluster-node-timeout 2 s), redisWaitReplicas ${o.waitReplicas}` : SINGLE_REDIS_SETUP,
      push,
      backends:
        backends === undefined
          ? undefined
          : { load: backendLoad, report: await checkBackends(redis, keys, backendLoad, backends) },
    });
    return result;
  } finally {
    // Teardown order: no new faults or respawns, no new streams, then the processes, then Redis.
    injector?.stop();
    await faulting?.catch(() => undefined);
    await outaging?.catch(() => undefined);
    await watcher?.finish(0).catch(() => undefined);
    await generationSampler?.stop();
    await group?.killAll();
    redis?.disconnect();
    await redisServer?.stop();
    await redisCluster?.stop();
    await backends?.stop();
    await receivers?.close();
    if (compiled !== undefined) {
      removeCompiledSources(compiled);
      delete process.env[COMPILED_SOURCES_ENV];
    }
    // A failed or crashed run keeps its evidence (Redis data, role logs, ledger); a passing one leaves nothing.
    if (o.keepTemp || result === undefined || !result.ok) o.log(`kept ${base} (logs/, redis/, ledger.txt)`);
    else rmSync(base, { recursive: true, force: true });
  }
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return value;
}

function envRange(name: string, fallback: [number, number]): [number, number] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const [min = NaN, max = min] = raw.split(',').map(Number);
  if (!Number.isFinite(min) || !Number.isFinite(max) || min < 0 || max < min) throw new Error(`${name} must be "min,max" in ms, got "${raw}"`);
  return [min, max];
}

function envFaults(name: string, fallback: FaultKind[]): FaultKind[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const kinds = raw.split(',').map((k) => k.trim());
  for (const kind of kinds) {
    if (kind !== 'worker' && kind !== 'gateway' && kind !== 'redis') throw new Error(`${name}: "${kind}" is not worker, gateway or redis`);
  }
  return kinds as FaultKind[];
}

async function main(): Promise<void> {
  // Ctrl-C: exit handlers in processes.ts and redis-server.ts kill what we started.
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
  const profile = process.env['CHAOS_PROFILE'] ?? 'shipped';
  const defaults = PROFILES[profile];
  if (defaults === undefined) throw new Error(`CHAOS_PROFILE must be one of ${Object.keys(PROFILES).join(', ')}, got "${profile}"`);
  const cluster = process.env['CHAOS_CLUSTER'] === '1';
  const result = await runChaos({
    ...defaults,
    tasks: envNumber('CHAOS_TASKS', defaults.tasks),
    remoteTasks: envNumber('CHAOS_REMOTE_TASKS', defaults.remoteTasks),
    modelTasks: envNumber('CHAOS_MODEL_TASKS', defaults.modelTasks),
    coordinators: envNumber('CHAOS_COORDINATORS', defaults.coordinators),
    seed: envNumber('CHAOS_SEED', defaults.seed),
    gateways: Math.max(2, envNumber('CHAOS_GATEWAYS', defaults.gateways)),
    workers: Math.max(2, envNumber('CHAOS_WORKERS', defaults.workers)),
    stepMs: envNumber('CHAOS_STEP_MS', defaults.stepMs),
    intervalMs: envNumber('CHAOS_INTERVAL_MS', defaults.intervalMs),
    anchors: envNumber('CHAOS_ANCHORS', defaults.anchors),
    pushShare: Math.min(1, envNumber('CHAOS_PUSH_SHARE', defaults.pushShare)),
    faultMix: envFaults('CHAOS_FAULTS', defaults.faultMix),
    redisDownMs: envRange('CHAOS_REDIS_DOWN_MS', defaults.redisDownMs),
    cluster,
    waitReplicas: envNumber('CHAOS_WAIT_REPLICAS', cluster ? 1 : 0),
    keepTemp: process.env['CHAOS_KEEP'] === '1',
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`\n${formatReport(result)}\n`);
  process.exitCode = result.ok ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`chaos: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(2);
  });
}
