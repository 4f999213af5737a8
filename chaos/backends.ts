// The chaos run's backends: a real downstream A2A agent (the official SDK's server, the test
// fixture, with a task store that survives its restarts) behind the gateway's `remote` agent, and
// a local OpenAI-compatible server behind its `model` agent. They are not faulted: they stand for
// systems the gateway fronts. Remote and model turns run under the same worker, gateway and
// Redis faults as the transfers, and the run checks that none was lost, that the downstream agent
// received each message once, and that no model reply was spliced across a lost worker.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../src/redis/connection.ts';
import type { RedisKeys } from '../src/store/keys.ts';
import { submitWithRetry } from './load.ts';
import type { Random } from './random.ts';

export const REMOTE_AGENT = 'remote';
export const MODEL_AGENT = 'model';
/** The downstream streams an artifact in REMOTE_CHUNKS chunks "w1 " … "wn ", 80 ms apart. */
const REMOTE_CHUNKS = 6;
const REMOTE_TEXT = `stream ${REMOTE_CHUNKS} 80`;
/** The model streams "w1 w2 … w10", one word every 60 ms. */
const MODEL_WORDS = 10;
const MODEL_TEXT = `slow=60 words=${MODEL_WORDS}`;

export interface Backends {
  downstreamUrl: string;
  modelBaseUrl: string;
  /** How often the downstream agent received each messageId. */
  downstreamMessages(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts one backend process and waits for the line saying it listens. */
async function startProcess(root: string, logFile: string, script: string, args: string[], ready: RegExp): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, script), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(logFile, { flags: 'a' });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${script} did not start within 30 s:\n${out}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${String(code)}) before it listened:\n${out}`));
    });
  });
  return child;
}

export async function startBackends(root: string, base: string): Promise<Backends> {
  const [downstreamPort, modelPort] = [await freePort(), await freePort()];
  const downstream = await startProcess(
    root,
    join(base, 'logs', 'downstream-agent.log'),
    'test/fixtures/downstream-agent/main.ts',
    ['--port', String(downstreamPort), '--store', join(base, 'downstream-tasks.json')],
    /listening on/,
  );
  const model = await startProcess(root, join(base, 'logs', 'fake-model.log'), 'test/support/fake-openai-server.ts', ['--port', String(modelPort)], /listening on/);
  const downstreamUrl = `http://127.0.0.1:${downstreamPort}`;
  return {
    downstreamUrl,
    modelBaseUrl: `http://127.0.0.1:${modelPort}/v1`,
    async downstreamMessages() {
      const stats = (await (await fetch(`${downstreamUrl}/_test/stats`)).json()) as { messages: Record<string, number> };
      return stats.messages;
    },
    async stop() {
      for (const child of [downstream, model]) {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGKILL');
          await exited;
        }
      }
    },
  };
}

/** The agents a chaos gateway and worker run: the demo (default, at the root URLs) and the two backends. */
export function agentsConfig(backends: Backends, demoOptions: Record<string, unknown>): Record<string, unknown> {
  return {
    agents: {
      default: { adapter: 'demo', adapterOptions: demoOptions },
      [REMOTE_AGENT]: { adapter: 'a2a', adapterOptions: { url: backends.downstreamUrl } },
      [MODEL_AGENT]: { adapter: 'openai', adapterOptions: { baseURL: backends.modelBaseUrl, model: 'chaos-model' } },
    },
  };
}

export interface BackendTask {
  agent: string;
  messageId: string;
  taskId: string;
}

export interface BackendLoad {
  tasks: BackendTask[];
  abandoned: string[];
  refused: { messageId: string; answer: string }[];
}

/** Submits remote and model tasks, interleaved, through any live gateway (retried with the same messageId). */
export async function runBackendLoad(options: {
  remoteTasks: number;
  modelTasks: number;
  seed: number;
  random: Random;
  intervalMs: number;
  gateways: () => string[];
  onRetry: (cause: string) => void;
}): Promise<BackendLoad> {
  const result: BackendLoad = { tasks: [], abandoned: [], refused: [] };
  const plan = [
    ...Array.from({ length: options.remoteTasks }, (_, i) => ({ agent: REMOTE_AGENT, i, text: REMOTE_TEXT })),
    ...Array.from({ length: options.modelTasks }, (_, i) => ({ agent: MODEL_AGENT, i, text: MODEL_TEXT })),
  ];
  // Interleaved in a seeded order, so remote and model turns meet the same faults.
  for (let i = plan.length - 1; i > 0; i--) {
    const j = options.random.int(0, i);
    [plan[i], plan[j]] = [plan[j] as (typeof plan)[number], plan[i] as (typeof plan)[number]];
  }
  const inFlight: Promise<void>[] = [];
  for (const item of plan) {
    const messageId = `chaos-${options.seed}-${item.agent}-${item.i}`;
    const pick = options.random.fork(messageId);
    const gateways = (): string[] => options.gateways().map((url) => `${url}/agents/${item.agent}`);
    inFlight.push(
      (async () => {
        const outcome = await submitWithRetry({ messageId, role: 'ROLE_USER', parts: [{ text: item.text }] }, gateways, pick, 60_000, options.onRetry);
        if (outcome === undefined) result.abandoned.push(messageId);
        else if ('refused' in outcome) result.refused.push({ messageId, answer: outcome.refused });
        else result.tasks.push({ agent: item.agent, messageId, taskId: outcome.taskId });
      })(),
    );
    await sleep(options.random.int(0, 4 * options.intervalMs));
  }
  await Promise.all(inFlight);
  return result;
}

export interface BackendReport {
  remoteSubmitted: number;
  remoteCompleted: number;
  modelSubmitted: number;
  modelCompleted: number;
  /** Submitted backend tasks missing or not terminal. Must be 0. */
  lost: number;
  lostTasks: { taskId: string; why: string }[];
  /** Terminal but not completed, by reason (a backend fault, not expected). */
  failedReasons: Record<string, number>;
  /** Completed, but the result is not what the backend said (a spliced or partial reply). Must be 0. */
  wrongResults: { taskId: string; problem: string }[];
  /** messageIds the downstream agent received more than once. Must be 0. */
  downstreamDuplicates: string[];
}

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

const expectedText = (agent: string): string =>
  agent === REMOTE_AGENT
    ? Array.from({ length: REMOTE_CHUNKS }, (_, i) => `w${i + 1} `).join('')
    : Array.from({ length: MODEL_WORDS }, (_, i) => `w${i + 1}`).join(' ');

export async function checkBackends(redis: RedisClient, keys: RedisKeys, load: BackendLoad, backends: Backends): Promise<BackendReport> {
  const report: BackendReport = {
    remoteSubmitted: load.tasks.filter((t) => t.agent === REMOTE_AGENT).length,
    remoteCompleted: 0,
    modelSubmitted: load.tasks.filter((t) => t.agent === MODEL_AGENT).length,
    modelCompleted: 0,
    lost: 0,
    lostTasks: [],
    failedReasons: {},
    wrongResults: [],
    downstreamDuplicates: [],
  };
  for (const task of load.tasks) {
    const [state, status, artifacts] = await redis.hmget(keys.task(task.taskId).task, 'state', 'status', 'artifacts');
    if (state === null || state === undefined || !TERMINAL.has(state)) {
      report.lost += 1;
      report.lostTasks.push({ taskId: task.taskId, why: `${task.agent}: ${state ?? 'missing from Redis'}` });
      continue;
    }
    if (state !== 'TASK_STATE_COMPLETED') {
      const reason = `${task.agent} ${state.replace('TASK_STATE_', '')}: ${(JSON.parse(status ?? '{}') as { message?: { parts?: { text?: string }[] } }).message?.parts?.map((p) => p.text ?? '').join(' ').slice(0, 120) ?? ''}`;
      report.failedReasons[reason] = (report.failedReasons[reason] ?? 0) + 1;
      continue;
    }
    if (task.agent === REMOTE_AGENT) report.remoteCompleted += 1;
    else report.modelCompleted += 1;
    const text = (JSON.parse(artifacts ?? '[]') as { parts: { text?: string }[] }[]).flatMap((a) => a.parts).map((p) => p.text ?? '').join('');
    if (text !== expectedText(task.agent)) report.wrongResults.push({ taskId: task.taskId, problem: `${task.agent} result is "${text.slice(0, 120)}"` });
  }
  const received = await backends.downstreamMessages();
  for (const [messageId, count] of Object.entries(received)) {
    // The gateway derives each downstream messageId from its own task and step; every one of them
    // belongs to a task of this run, and each must reach the downstream agent once.
    if (count > 1) report.downstreamDuplicates.push(`${messageId} ×${count}`);
  }
  if (report.remoteSubmitted > 0 && Object.keys(received).length === 0) report.wrongResults.push({ taskId: '-', problem: 'the downstream agent received no message at all' });
  return report;
}
