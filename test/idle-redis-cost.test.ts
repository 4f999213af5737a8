// Idle cost (issue 29): a gateway with nothing to do makes no Redis calls more often than once a
// second. A real `a2a-gateway start` process (gateway and workers, default configuration: push
// and schedules on, the control plane always on) runs against a redis-server of this test's own;
// once it settled, every command it sends is listed with MONITOR (a script is one command: what
// it runs inside is not counted again; a blocking wait counts once however long it blocks) and
// grouped by its source (command and key). Then work arrives and must be taken at once: woken,
// not found by the next idle poll.
// Before this issue the same process sent about 6.3 commands a second (11.3 counted by
// commandstats, which also counts the commands scripts run): the control plane's change poll
// alone 4 a second, each BullMQ worker a blocking wait and a fetch every 5 s, the push outbox 16
// shard sizes per sweep. Run with IDLE_COST_LIST=1 to print the sources.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushJobData } from '../queues/push.ts';
import { createLogger } from '../src/logging/logger.ts';
import { PushOutbox } from '../src/push/outbox.ts';
import { PushStore } from '../src/store/push/push-store.ts';
import { whenChildReady } from './support/child-ready.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { ROOT, rpc, textMessage, waitFor } from './support/harness.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';
import { useOwnRedis } from './support/own-redis-suite.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';
import { openMonitor } from './support/monitor.ts';

/** After the process reports ready: its start-up reads and first sweeps are over. */
const SETTLE_MS = 5_000;
/**
 * Long enough to hold the periodic work an idle process still does (the queues' stalled checks
 * every 15 s, their idle fetches every 30 s, the reconcilers' passes), so the rate is a rate.
 */
const WINDOW_MS = 25_000;
/** The control plane confirms its view once a second (its catch-up bound, docs/admin-api.md). */
const CONTROL_POLLS_PER_SECOND = 1;
/** Everything else together, at most one command a second. */
const OTHER_COMMANDS_PER_SECOND = 1;
/**
 * Far below the 30 s an idle BullMQ worker blocks and the up to 30 s between idle outbox sweeps:
 * what arrives within it was woken, not polled for.
 */
const PROMPT_MS = 10_000;

interface StartedProcess {
  child: ChildProcess;
  url: string;
  exited: Promise<unknown>;
}

async function startGatewayAndWorkers(redisUrl: string, dataDir: string): Promise<StartedProcess> {
  const child = spawn(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'start'], {
    cwd: ROOT,
    env: {
      ...process.env,
      A2A_REDIS_URL: redisUrl,
      A2A_REDIS_CLUSTER_NODES: '',
      A2A_KEY_PREFIX: 'idle',
      A2A_PORT: '0',
      A2A_DATA_DIR: dataDir,
      A2A_AUTH_ENABLED: 'false',
      A2A_PUSH_ALLOWED_HOSTS: '127.0.0.1',
      A2A_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const { value: url } = await whenChildReady(child, { name: 'gateway and workers', ready: (out) => /agent card: (http:\/\/[^/\s]+)\//.exec(out)?.[1] });
  return { child, url, exited };
}

/** Where a command comes from: its name and first key, shard and queue numbers folded. */
function sourceOf(args: string[]): string {
  const [name = '', first = '', , third = ''] = args.map((arg) => arg.slice(0, 80));
  const lower = name.toLowerCase();
  // A script by its first key (its KEYS follow the script or its sha, and the key count).
  const key = lower === 'evalsha' || lower === 'eval' ? `${lower === 'eval' ? 'script' : first.slice(0, 8)} ${third}` : first;
  return `${lower} ${key.replace(/\{push:\d+\}/, '{push:n}').replace(/^idle:/, '')}`.trim();
}

function commandStats(info: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1] as string, Number(match[2]));
  return calls;
}

describe('an idle gateway with its workers', () => {
  let own: OwnRedis;
  let receiver: WebhookReceiver;
  let started: StartedProcess | undefined;
  let dataDir: string;

  beforeAll(async () => {
    own = await startOwnRedis();
    receiver = await startWebhookReceiver();
    dataDir = mkdtempSync(join(tmpdir(), 'a2a-idle-'));
    started = await startGatewayAndWorkers(own.url, dataDir);
  }, 60_000);

  afterAll(async () => {
    if (started !== undefined && started.child.exitCode === null && started.child.signalCode === null) {
      started.child.kill('SIGKILL');
      await started.exited;
    }
    await receiver?.close();
    await own?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends Redis about one command a second, and still takes new work and delivers its webhooks at once', async () => {
    const gateway = started as StartedProcess;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const admin = new Redis(own.url);
    const monitor = await openMonitor(admin);
    const sent: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') sent.push(args);
    });
    // MONITOR answers before it streams; counting starts once it does.
    await new Promise((resolve) => setTimeout(resolve, 200));
    sent.length = 0;
    const statsBefore = commandStats(await admin.info('commandstats'));
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    const statsAfter = commandStats(await admin.info('commandstats'));
    const counted = sent.filter((args) => args[0]?.toLowerCase() !== 'info');
    monitor.disconnect();
    await admin.quit();

    const seconds = WINDOW_MS / 1_000;
    const bySource = new Map<string, number>();
    for (const args of counted) bySource.set(sourceOf(args), (bySource.get(sourceOf(args)) ?? 0) + 1);
    const listing = [...bySource].sort((a, b) => b[1] - a[1]).map(([source, count]) => `${(count / seconds).toFixed(2)}/s  ${count} × ${source}`).join('\n');
    let statsTotal = 0;
    for (const [name, calls] of statsAfter) if (name !== 'info' && name !== 'monitor') statsTotal += calls - (statsBefore.get(name) ?? 0);
    const summary = `${counted.length} commands in ${seconds} s (${(counted.length / seconds).toFixed(2)}/s; commandstats, scripts' own commands included: ${(statsTotal / seconds).toFixed(2)}/s):\n${listing}`;
    if (process.env.IDLE_COST_LIST) console.log(summary);

    const controlPolls = bySource.get('get {control}:seq') ?? 0;
    // One more than the window holds whole seconds: a poll may land at either edge.
    expect(controlPolls, summary).toBeLessThanOrEqual(CONTROL_POLLS_PER_SECOND * seconds + 1);
    for (const [source, count] of bySource) expect(count, `${source}: more often than once a second\n${summary}`).toBeLessThanOrEqual(seconds + 1);
    expect(counted.length - controlPolls, summary).toBeLessThanOrEqual(OTHER_COMMANDS_PER_SECOND * seconds);

    // Work after the idle stretch: a turn and its push deliveries are taken at once.
    const sentAt = Date.now();
    const { body } = await rpc(`${gateway.url}/a2a/jsonrpc`, 'SendMessage', {
      message: textMessage('hello after a quiet spell'),
      configuration: { taskPushNotificationConfig: { url: `${receiver.url}/idle` } },
    });
    const task = (body.result as { task: { id: string; status: { state: string } } }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(Date.now() - sentAt).toBeLessThan(PROMPT_MS);
    const delivered = await waitFor(
      () => receiver.accepted('/idle').find((d) => JSON.stringify(d.json).includes('TASK_STATE_COMPLETED')),
      PROMPT_MS - (Date.now() - sentAt),
      'the webhook of the completed task',
    );
    expect(JSON.stringify(delivered.json)).toContain(task.id);
  }, 90_000);
});

describe('the push outbox sweeper while the outbox is empty', () => {
  let redis: Redis;
  useOwnRedis((client) => (redis = client));

  it('reads one change counter instead of every shard size, sweeps a task indexed since at the next tick, then only its shard', async () => {
    const store = new PushStore(redis, 'idle');
    const calls = { changes: 0, sizes: 0, visited: [] as string[] };
    const readChanges = store.outboxChanges.bind(store);
    const readSizes = store.outboxSizes.bind(store);
    const next = store.next.bind(store);
    store.outboxChanges = () => ((calls.changes += 1), readChanges());
    store.outboxSizes = () => ((calls.sizes += 1), readSizes());
    store.next = (taskId, ...rest) => (calls.visited.push(taskId), next(taskId, ...rest));
    const queue = { add: () => Promise.resolve(undefined), getJob: () => Promise.resolve(undefined) } as unknown as Queue<PushJobData>;
    const outbox = new PushOutbox(store, queue, createLogger('silent'), 50);
    outbox.start();
    try {
      // The first sweep reads every shard; the idle ones after it only the counter.
      await waitFor(() => (calls.changes >= 4 ? true : undefined), 10_000, 'idle sweeps');
      expect(calls.sizes).toBe(1);
      // Indexed without a live notification (one that was lost): the next sweep finds it.
      await store.index('quiet-task');
      await waitFor(() => (calls.visited.includes('quiet-task') ? true : undefined), 10_000, 'the sweep of the indexed task');
      expect(calls.sizes).toBe(2);
      // Still indexed (its config may be on its way): swept again, without reading every shard.
      await waitFor(() => (calls.visited.filter((id) => id === 'quiet-task').length >= 3 ? true : undefined), 10_000, 'more sweeps of the task');
      expect(calls.sizes).toBe(2);
    } finally {
      await outbox.close();
    }
  });
});
