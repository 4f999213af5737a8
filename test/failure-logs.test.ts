// Every failure an operator must act on is one structured log line at WARN or ERROR, of one
// shape: the class in `failure`, a fixed message, the `cause`, and the ids that lead to the task,
// its owner and its trace (docs/observability.md, "Failures in the log"). The logger's output is
// captured as pino writes it; tracing runs in-process so the turn lines carry a traceId. Alongside:
// a transient backend failure (503, connection refused) is retried with backoff before the turn
// fails, and the watching client hears about it, as it hears when a turn resumes after its worker
// was lost.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { JwtVerifier } from '../src/auth/jwt/jwt-verifier.ts';
import { KeyFetchFailures } from '../src/auth/jwt/key-fetch-failures.ts';
import { configSchema } from '../src/config/schema.ts';
import { createLogger } from '../src/logging/logger.ts';
import { FAILURE_CLASSES, type FailureClass } from '../src/logging/operator-failures.ts';
import type { StreamResponse, Task } from '../src/protocol/types.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { TaskStore } from '../src/store/task-store.ts';
import { startTracing, type TracingHandle } from '../src/telemetry/tracing.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { freePort, spawnDownstreamAgent, type DownstreamAgentProcess } from './support/downstream-agent.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';
import { ROOT, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { captureLogLines, type LogLine } from './support/log-capture.ts';
import { openSse } from './support/sse.ts';

type Json = LogLine;

const { lines, destination: capture } = captureLogLines();
const logger = createLogger('debug', 'a2a-gateway', capture);
const PINO_LEVEL = { warn: 40, error: 50 } as const;

/** The lines of one failure class, each checked for the shape every failure line has. */
function failureLines(failure: FailureClass, match: (line: Json) => boolean = () => true): Json[] {
  const found = lines.filter((line) => line.failure === failure && match(line));
  for (const line of found) {
    expect(line.level).toBe(PINO_LEVEL[FAILURE_CLASSES[failure].level]);
    expect(line.msg).toBe(FAILURE_CLASSES[failure].message);
    expect(typeof line.cause).toBe('string');
    expect(line.cause).not.toBe('');
  }
  return found;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const FAST = { retryInitialDelayMs: 100, retryMaxDelayMs: 400, pollInitialDelayMs: 100, pollMaxDelayMs: 400 };
const STREAM_HEADERS = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' };
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

let tracing: TracingHandle;

beforeAll(() => {
  tracing = startTracing({ otlpEndpoint: undefined, otlpProtocol: 'http/protobuf', serviceName: 'failure-logs', exporter: new InMemorySpanExporter(), queueSpans: false });
});

afterAll(async () => {
  await tracing?.shutdown();
});

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, url: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}` };
}

const close = (server: Server | undefined): Promise<void> => new Promise((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));

async function finalTask(url: string, taskId: string, timeoutMs = 30_000): Promise<Task> {
  return waitFor(
    async () => {
      const { body } = await rpc(url, 'GetTask', { id: taskId });
      const task = body.result as Task | undefined;
      return task !== undefined && TERMINAL.has(task.status.state) ? task : undefined;
    },
    timeoutMs,
    `task ${taskId} to end`,
  );
}

const resultsOf = (data: readonly { data: string }[]): StreamResponse[] => data.map((e) => (JSON.parse(e.data) as { result: StreamResponse }).result);
const statusText = (event: StreamResponse): string => ('statusUpdate' in event ? (event.statusUpdate.status.message?.parts[0]?.text ?? '') : '');

describe('backends, turns and webhooks', () => {
  let downstream: DownstreamAgentProcess;
  let flaky: { server: Server; url: string };
  let refusingWebhook: { server: Server; url: string };
  /** How many requests the proxy answers 503 before it forwards again (set by the test that wants it). */
  let failNext = 0;
  let gw: TestGateway;
  let gonePort: number;
  let model: FakeOpenAIServer;

  beforeAll(async () => {
    downstream = await spawnDownstreamAgent();
    model = await startFakeOpenAIServer();
    // In front of the downstream's card: HTTP 503 while told to (a restarting agent behind a proxy), else the card.
    flaky = await listen((req, res) => {
      if (failNext > 0) {
        failNext -= 1;
        res.writeHead(503).end('upstream restarting');
        return;
      }
      const forwarded = request(`${downstream.url}${req.url ?? '/'}`, { method: req.method, headers: { ...req.headers, host: `127.0.0.1:${downstream.port}` } }, (answer) => {
        if (!(req.url ?? '').includes('agent-card')) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        // The card names the proxy, as a reverse proxy's agent would: the gateway calls only the
        // origin it was configured with (origin pinning), so every call passes the proxy.
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const card = Buffer.concat(chunks).toString('utf8').replaceAll(downstream.url, flaky.url);
          res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json' }).end(card);
        });
      });
      req.pipe(forwarded);
    });
    refusingWebhook = await listen((_req, res) => res.writeHead(400).end('no such hook'));
    gonePort = await freePort();
    gw = await startTestGateway({
      name: 'faillogs',
      logger,
      config: {
        push: { allowedHosts: ['127.0.0.1'], sweepIntervalMs: 200, retryInitialDelayMs: 100, retryMaxDelayMs: 300 },
        agents: {
          default: { adapter: 'demo', adapterOptions: { stepMs: 20 } },
          flaky: { adapter: 'a2a', adapterOptions: { url: flaky.url, ...FAST } },
          gone: { adapter: 'a2a', adapterOptions: { url: `http://127.0.0.1:${gonePort}`, ...FAST }, limits: { turnDeadlineMs: 2_000 } },
          model: { adapter: 'openai', adapterOptions: { baseURL: model.baseURL, model: 'fake-model', stream: false, retryBaseDelayMs: 100 } },
        },
      },
    });
  }, 120_000);

  afterAll(async () => {
    await gw?.close();
    await close(flaky?.server);
    await close(refusingWebhook?.server);
    await downstream?.close();
    await model?.close();
  }, 60_000);

  it('a downstream answering 503 is retried with backoff, each retry a WARN line, and the watching client is told; the turn then completes', async () => {
    failNext = 2;
    const { response, reader } = await openSse(`${gw.url}/agents/flaky/a2a/jsonrpc`, {
      method: 'POST',
      headers: STREAM_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: textMessage('echo through the outage') } }),
    });
    expect(response.status).toBe(200);
    await reader.done;
    const events = resultsOf(reader.events);
    const first = events[0] as StreamResponse;
    const taskId = 'task' in first ? first.task.id : '';
    const contextId = 'task' in first ? first.task.contextId : '';
    const last = events.at(-1) as StreamResponse;
    expect('statusUpdate' in last && last.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    // The client heard, while the turn waited, why and when the next try comes.
    const waiting = events.filter((e) => /not reachable right now \(the downstream agent answered HTTP 503\); retrying in at most [\d.]+ s/.test(statusText(e)));
    expect(waiting).toHaveLength(1);
    // And when the downstream answered again, that the turn goes on.
    const back = events.findIndex((e) => statusText(e) === 'The downstream agent is reachable again; the turn goes on.');
    expect(back).toBeGreaterThan(events.indexOf(waiting[0] as StreamResponse));
    expect('statusUpdate' in (waiting[0] as StreamResponse) && (waiting[0] as { statusUpdate: { status: { state: string } } }).statusUpdate.status.state).toBe('TASK_STATE_WORKING');

    const retries = failureLines('backend-unavailable', (line) => line.taskId === taskId);
    expect(retries).toHaveLength(2);
    for (const line of retries) {
      expect(line).toMatchObject({ contextId, agent: 'flaky', backend: flaky.url, cause: 'the downstream agent answered HTTP 503' });
      expect(line.owner).toMatch(/^flaky\//);
      expect(line.traceId).toMatch(TRACE_ID);
      expect(line.retryWithinMs).toBeGreaterThan(0);
    }
    // The two 503s may meet one call twice or two calls (the card's fetch, the send) once each.
    expect(retries.map((line) => line.callAttempt).reduce((sum, n) => sum + Number(n), 0)).toBeGreaterThanOrEqual(2);
    expect(failureLines('turn-failed', (line) => line.taskId === taskId)).toEqual([]);
  }, 60_000);

  it('a refused connection is retried until the turn deadline, then the failed turn is one ERROR line with the reason', async () => {
    const { body } = await rpc(`${gw.url}/agents/gone/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo anyone?'), configuration: { returnImmediately: true } });
    const created = (body.result as { task: Task }).task;
    const final = await finalTask(`${gw.url}/agents/gone/a2a/jsonrpc`, created.id);
    expect(final.status.state).toBe('TASK_STATE_FAILED');

    const retries = failureLines('backend-unavailable', (line) => line.taskId === created.id);
    expect(retries.length).toBeGreaterThanOrEqual(2);
    for (const line of retries) {
      expect(line).toMatchObject({ contextId: created.contextId, agent: 'gone', backend: `http://127.0.0.1:${gonePort}` });
      expect(line.cause).toContain('ECONNREFUSED');
    }
    const failed = failureLines('turn-failed', (line) => line.taskId === created.id);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ contextId: created.contextId, agent: 'gone', turn: 1, level: 50 });
    expect(failed[0]?.owner).toMatch(/^gone\//);
    expect(failed[0]?.traceId).toMatch(TRACE_ID);
    expect(failed[0]?.cause).toBe(final.status.message?.parts[0]?.text);
    expect(failed[0]?.cause).toContain('turnDeadlineMs');
  }, 60_000);

  it('a model server answering 500 is retried with backoff, the retry a WARN line', async () => {
    const { body } = await rpc(`${gw.url}/agents/model/a2a/jsonrpc`, 'SendMessage', { message: textMessage('fail-500=1 hello model') });
    const task = (body.result as { task: Task }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const retries = failureLines('backend-unavailable', (line) => line.taskId === task.id);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ contextId: task.contextId, agent: 'model', backend: new URL(model.baseURL).origin, model: 'fake-model', status: 500, callAttempt: 1 });
    expect(retries[0]?.owner).toMatch(/^model\//);
    expect(retries[0]?.traceId).toMatch(TRACE_ID);
    expect(retries[0]?.retryInMs).toBeGreaterThan(0);
  }, 30_000);

  it('a webhook delivery that will not be retried is one WARN line naming the task, owner, config and receiver', async () => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
      message: textMessage('echo to a refusing hook'),
      configuration: { taskPushNotificationConfig: { id: 'hook', url: `${refusingWebhook.url}/hooks/nowhere` } },
    });
    const task = (body.result as { task: Task }).task;
    const [line] = await waitFor(() => {
      const found = failureLines('push-dead-lettered', (l) => l.taskId === task.id);
      return found.length > 0 ? found : undefined;
    }, 20_000, 'the dead-letter line');
    expect(line).toMatchObject({ agent: 'default', configId: 'hook', receiver: refusingWebhook.url, status: 400 });
    expect(line?.owner).toMatch(/^default\//);
    expect(typeof line?.deliveryId).toBe('string');
    expect(line?.cause).toMatch(/400/);
  }, 30_000);
});

describe('a turn whose worker was lost', () => {
  let gw: TestGateway;
  let worker: WorkerHandle | undefined;

  beforeAll(async () => {
    gw = await startTestGateway({ name: 'faillogs-loss', inProcessWorker: false, logger });
  });

  afterAll(async () => {
    await worker?.close();
    await gw?.close();
  });

  it('is retried on another worker with one WARN line, and the watching client gets a status update when it resumes', async () => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo after a loss'), configuration: { returnImmediately: true } });
    const task = (body.result as { task: Task }).task;
    // A worker takes the turn and dies: its lease lapses without a result.
    const store = new TaskStore(gw.redis, gw.prefix);
    const ownerKey = (await gw.redis.hget(store.keys.task(task.id).task, 'owner')) as string;
    const lost = await store.turns.acquireLease({ taskId: task.id, ownerKey, contextId: task.contextId, workerId: 'lost-worker', leaseTtlMs: 300, now: new Date() });
    if (lost.kind !== 'acquired') throw new Error(`expected the lease, got ${lost.kind}`);
    // What a worker writes as it runs (with its first step): who runs the attempt.
    await store.turns.writeTurnRecord(task.id, lost.generation, { turn: 1, inputMessageIds: [], acceptedAtMs: Date.now(), attempts: 1, workerId: 'lost-worker', adapter: 'demo@1.0.0' });
    const { reader } = await openSse(gw.jsonRpcUrl, {
      method: 'POST',
      headers: STREAM_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: task.id } }),
    });
    worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), logger, { baseDir: ROOT });
    await reader.done;
    const events = resultsOf(reader.events);
    const resumed = events.findIndex((e) => 'statusUpdate' in e && (e.statusUpdate.metadata as Json | undefined)?.a2aGateway?.workerLost !== undefined);
    expect(resumed).toBeGreaterThan(0);
    const update = (events[resumed] as { statusUpdate: { status: Task['status']; metadata: Json } }).statusUpdate;
    expect(update.status.state).toBe('TASK_STATE_WORKING');
    expect(update.status.message?.parts[0]?.text).toMatch(/^The worker running this turn was lost; another worker resumes it now \(attempt 2 of 3, maxTurnAttempts\)\.$/);
    expect(update.metadata.a2aGateway.workerLost).toEqual({ turn: 1, attempt: 2, maxTurnAttempts: 3 });
    const last = events.at(-1) as StreamResponse;
    expect('statusUpdate' in last && last.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    expect(resumed).toBeLessThan(events.length - 1);

    const retried = failureLines('worker-lost', (line) => line.taskId === task.id);
    expect(retried).toHaveLength(1);
    expect(retried[0]).toMatchObject({ contextId: task.contextId, agent: 'default', owner: ownerKey, previousWorker: 'lost-worker', attempt: 2, turn: 1 });
    expect(retried[0]?.traceId).toMatch(TRACE_ID);
    expect(retried[0]?.cause).toContain('lost-worker');
  }, 60_000);

  it('a turn that ran once says nothing of a loss', async () => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('echo no loss') });
    const task = (body.result as { task: Task }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(failureLines('worker-lost', (line) => line.taskId === task.id)).toEqual([]);
    const stored = await gw.redis.xrange(`${gw.prefix}:{${task.id}}:events`, '-', '+');
    expect(stored.some(([, fields]) => (fields[1] ?? '').includes('workerLost'))).toBe(false);
  }, 30_000);
});

describe('a schedule whose firings were missed', () => {
  let gw: TestGateway;
  let worker: WorkerHandle | undefined;

  beforeAll(async () => {
    gw = await startTestGateway({ name: 'faillogs-sched', inProcessWorker: false, logger, config: { schedules: { minIntervalSeconds: 1, lateAfterMs: 1_500 }, push: { enabled: false } } });
  });

  afterAll(async () => {
    await worker?.close();
    await gw?.close();
  });

  it('is one WARN line per decision naming the schedule, its owner and how many firings were skipped', async () => {
    const { body } = await rpc(gw.jsonRpcUrl, 'CreateSchedule', { message: { parts: [{ text: 'echo tick' }] }, cron: '* * * * * *', lateness: { policy: 'skip' } });
    expect(body.error).toBeUndefined();
    const scheduleId = (body.result as { id: string }).id;
    // No worker runs: the planned seconds pass unhandled, then one comes up.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), logger, { baseDir: ROOT });
    const [line] = await waitFor(() => {
      const found = failureLines('schedule-misfire', (l) => l.scheduleId === scheduleId && l.misfire === 'missed');
      return found.length > 0 ? found : undefined;
    }, 15_000, 'the misfire line');
    await rpc(gw.jsonRpcUrl, 'DeleteSchedule', { id: scheduleId });
    expect(line).toMatchObject({ agent: 'default', latenessPolicy: 'skip', firedLate: 0 });
    expect(line?.owner).toMatch(/^default\//);
    expect(line?.skipped).toBeGreaterThanOrEqual(1);
    expect(line?.cause).toMatch(/missed while no worker fired them .*lateness policy skip skipped \d+ and fired 0 late/);
  }, 40_000);
});

describe('an issuer whose keys cannot be fetched', () => {
  it('is one WARN line with the issuer, its jwksUri and the cause, not one per token', async () => {
    const port = await freePort();
    const jwksUri = `http://127.0.0.1:${port}/jwks.json`;
    const { auth } = configSchema.parse({ auth: { issuers: [{ id: 'corp', issuer: 'https://issuer.example', audience: 'gateway', jwksUri, algorithms: ['ES256'] }] } });
    const verifier = new JwtVerifier({ issuers: auth.issuers, clockToleranceSeconds: 5, jwksCacheSeconds: 60, baseDir: ROOT, logger });
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT({ scope: 'a2a:read' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer('https://issuer.example').setAudience('gateway').setSubject('alice').setExpirationTime('5m').sign(privateKey);
    for (let i = 0; i < 5; i++) await expect(verifier.verify(token)).rejects.toMatchObject({ message: expect.stringContaining('cannot be fetched') });
    const found = failureLines('jwks-fetch-failed', (line) => line.jwksUri === jwksUri);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ issuerId: 'corp', issuer: 'https://issuer.example', suppressed: 0 });
  });

  it('after the interval, the next line counts the failures it did not log one by one', () => {
    const { lines: own, destination } = captureLogLines();
    const sink = createLogger('debug', 'a2a-gateway', destination);
    let now = 0;
    const failures = new KeyFetchFailures(sink, 60_000, () => now);
    const issuer = { id: 'corp', issuer: 'https://issuer.example', jwksUri: 'https://issuer.example/jwks.json' };
    for (let i = 0; i < 4; i++) failures.failed(issuer, new Error('fetch failed'));
    now = 60_000;
    failures.failed(issuer, new Error('fetch failed'));
    expect(own.map((line) => line.suppressed)).toEqual([0, 3]);
    // Back up: the next failure is news again and logs at once.
    failures.recovered('corp');
    now = 61_000;
    failures.failed(issuer, new Error('fetch failed'));
    expect(own).toHaveLength(3);
  });
});

describe('a configuration the gateway refuses', () => {
  it('is the plain line for the terminal and one ERROR line for the log pipeline', async () => {
    const stderr = await new Promise<string>((resolve) => {
      execFile(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'start'], { cwd: ROOT, env: { ...process.env, A2A_PORT: 'eighty', A2A_LOG_LEVEL: 'info' }, timeout: 30_000 }, (_error, _stdout, err) => resolve(err));
    });
    const [plain, structured] = stderr.trim().split('\n');
    expect(plain).toMatch(/^a2a-gateway: .*A2A_PORT/);
    const line = JSON.parse(structured ?? '{}') as Json;
    expect(line).toMatchObject({ level: 50, msg: FAILURE_CLASSES['config-rejected'].message, failure: 'config-rejected', stage: 'settings' });
    expect(line.cause).toContain('A2A_PORT');
  }, 40_000);
});

describe('the failure classes', () => {
  it('are each in the operator table of docs/observability.md with their level and message', () => {
    const doc = readFileSync(`${ROOT}/docs/observability.md`, 'utf8');
    for (const [failure, { level, message }] of Object.entries(FAILURE_CLASSES)) {
      const row = doc.split('\n').find((l) => l.startsWith(`| \`${failure}\``));
      expect(row, `a table row for ${failure}`).toBeDefined();
      expect(row).toContain(`| ${level.toUpperCase()} |`);
      expect(row).toContain(`\`${message}\``);
    }
  });
});
