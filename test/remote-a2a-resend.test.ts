// A send attempt that fails after the downstream received it must not be sent again blindly:
// the official SDK server does not de-duplicate by messageId, so a plain retry would start a
// second downstream task for one turn. A proxy of this test's own, between the gateway and the
// downstream agent, cuts the gateway's connection right after the downstream took the message
// (or, for contrast, before it was forwarded at all); the retry must look downstream first.
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { GetTaskRequest } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDownstreamFetch } from '../adapters/remote-a2a/downstream-fetch.ts';
import type { DownstreamState } from '../adapters/remote-a2a/downstream-state.ts';
import { refused } from '../adapters/remote-a2a/errors.ts';
import { downstreamMessageId } from '../adapters/remote-a2a/message-id.ts';
import type { Task, TaskState } from '../src/protocol/types.ts';
import type { StepRecord } from '../src/store/task-store.ts';
import { freePort, spawnDownstreamAgent, type DownstreamAgentProcess } from './support/downstream-agent.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

const FAST = { retryInitialDelayMs: 50, retryMaxDelayMs: 300, pollInitialDelayMs: 50, pollMaxDelayMs: 300 };
const TURN_ENDED: ReadonlySet<TaskState> = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED', 'TASK_STATE_INPUT_REQUIRED']);

type Binding = 'jsonrpc' | 'rest';

interface ProxySettings {
  /** The one interface the rewritten card offers, and whether it offers streaming. */
  binding: Binding;
  streaming: boolean;
  /** Which send (1-based, counted across the proxy's life) has its connection cut. */
  cutSend: number;
  /** `after-delivery`: forwarded, and cut once the downstream starts answering; `before-delivery`: cut unforwarded. */
  cut: 'after-delivery' | 'before-delivery';
}

interface CuttingProxy {
  url: string;
  /** SendMessage / SendStreamingMessage requests seen, and how many were cut. */
  readonly sends: number;
  readonly cuts: number;
  close(): Promise<void>;
}

const SEND_METHODS = new Set(['SendMessage', 'SendStreamingMessage']);

function isSend(path: string, body: string): boolean {
  if (/\/message:(send|stream)$/.test(path)) return true;
  try {
    return SEND_METHODS.has(String((JSON.parse(body) as { method?: unknown }).method));
  } catch {
    return false;
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * The downstream's card names its own port in its interface URLs; the proxy serves it with its
 * own origin instead (and only the binding under test), so every call goes through the proxy.
 */
async function startCuttingProxy(target: string, settings: ProxySettings): Promise<CuttingProxy> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  let sends = 0;
  let cuts = 0;
  const protocolBinding = settings.binding === 'jsonrpc' ? 'JSONRPC' : 'HTTP+JSON';

  const serveCard = async (res: ServerResponse): Promise<void> => {
    const card = (await (await fetch(`${target}/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { url: string; protocolBinding: string }[];
      capabilities?: Record<string, unknown>;
    };
    card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolBinding === protocolBinding).map((i) => ({ ...i, url: i.url.replace(target, origin) }));
    card.capabilities = { ...card.capabilities, streaming: settings.streaming };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, cutThis: boolean): void => {
    const upstream = httpRequest(`${target}${req.url ?? '/'}`, { method: req.method, headers: { ...req.headers, host: new URL(target).host }, agent: false }, (answer) => {
      if (!cutThis) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      // The downstream has the request and is answering: the gateway gets none of it.
      const cutNow = (): void => {
        if (req.socket.destroyed) return;
        cuts += 1;
        req.socket.destroy();
      };
      answer.once('data', cutNow);
      answer.once('end', cutNow);
      answer.resume();
    });
    upstream.on('error', () => req.socket.destroy());
    upstream.end(body);
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') return serveCard(res);
      let cutThis = false;
      if (isSend(req.url ?? '', body.toString('utf8'))) {
        sends += 1;
        cutThis = sends === settings.cutSend;
      }
      if (cutThis && settings.cut === 'before-delivery') {
        cuts += 1;
        req.socket.destroy();
        return;
      }
      forward(req, res, body, cutThis);
    })().catch(() => req.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: origin,
    get sends() {
      return sends;
    },
    get cuts() {
      return cuts;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let downstream: DownstreamAgentProcess;

beforeAll(async () => {
  downstream = await spawnDownstreamAgent({ bindings: ['jsonrpc', 'rest'], streaming: true });
}, 60_000);

afterAll(async () => {
  await downstream?.close();
});

/** A gateway in front of the downstream, through a proxy that cuts one send. */
async function throughProxy(name: string, settings: ProxySettings): Promise<{ gw: TestGateway; proxy: CuttingProxy; close(): Promise<void> }> {
  const proxy = await startCuttingProxy(downstream.url, settings);
  const gw = await startTestGateway({ name, config: { adapter: 'a2a', adapterOptions: { url: proxy.url, ...FAST } } });
  return {
    gw,
    proxy,
    async close() {
      await gw.close();
      await proxy.close();
    },
  };
}

async function send(gw: TestGateway, text: string, taskId?: string): Promise<Task> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text, taskId === undefined ? {} : { taskId }), configuration: { returnImmediately: true } });
  expect(body.error).toBeUndefined();
  const id = (body.result as { task: Task }).task.id;
  return waitFor(
    async () => {
      const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id })).body.result as Task;
      // A task waiting for input only counts once this turn has run (its turn was not the one asked about).
      return TURN_ENDED.has(task.status.state) && (taskId === undefined || task.status.state !== 'TASK_STATE_INPUT_REQUIRED') ? task : undefined;
    },
    30_000,
    `task ${id} to end its turn`,
  );
}

async function stepsOf(gw: TestGateway, taskId: string): Promise<Record<string, StepRecord>> {
  const raw = await gw.redis.hgetall(`${gw.prefix}:{${taskId}}:steps`);
  return Object.fromEntries(Object.entries(raw).map(([field, json]) => [field, JSON.parse(json) as StepRecord]));
}

async function downstreamOf(gw: TestGateway, taskId: string): Promise<DownstreamState | undefined> {
  const raw = await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'adapter:downstream');
  return raw === null ? undefined : (JSON.parse(raw) as DownstreamState);
}

/** The downstream task holds the message under its messageId (it is the one the first attempt made). */
async function downstreamHolds(downstreamTaskId: string, messageId: string): Promise<boolean> {
  const direct = await new ClientFactory().createFromUrl(downstream.url);
  const task = await direct.getTask(GetTaskRequest.fromJSON({ id: downstreamTaskId }));
  return task.history.some((m) => m.messageId === messageId);
}

const artifactText = (task: Task, id: string): string => (task.artifacts ?? []).find((a) => a.artifactId === id)?.parts.map((p) => p.text ?? '').join('') ?? '';

describe.each([
  { binding: 'jsonrpc', streaming: true },
  { binding: 'jsonrpc', streaming: false },
  { binding: 'rest', streaming: true },
  { binding: 'rest', streaming: false },
] as const)('a send cut off after the downstream received it ($binding, streaming: $streaming)', ({ binding, streaming }) => {
  it('is found downstream and followed: the downstream got the message once, and the journal holds one send step with its task', async () => {
    const { gw, proxy, close } = await throughProxy(`remote-resend-${binding}-${String(streaming)}`, { binding, streaming, cutSend: 1, cut: 'after-delivery' });
    try {
      const final = await send(gw, `echo once through ${binding}`);
      expect(proxy.cuts).toBe(1);
      expect(final.status.state).toBe('TASK_STATE_COMPLETED');
      expect(artifactText(final, 'echo')).toBe(`echo once through ${binding}`);

      const messageId = downstreamMessageId(`${final.id}:1:send`);
      expect((await downstream.stats()).messages[messageId]).toBe(1);
      // Only the cut send went out: the retry read instead of sending.
      expect(proxy.sends).toBe(1);
      const steps = await stepsOf(gw, final.id);
      expect(Object.keys(steps)).toEqual(['1:send']);
      const sendStep = steps['1:send'];
      const state = await downstreamOf(gw, final.id);
      expect(sendStep?.state).toBe('done');
      expect(sendStep?.reference).toBeDefined();
      expect(sendStep?.reference).toBe(state?.taskId);
      expect(sendStep?.value).toMatchObject({ kind: 'task', taskId: sendStep?.reference });
      expect(await downstreamHolds(sendStep?.reference as string, messageId)).toBe(true);
    } finally {
      await close();
    }
  }, 60_000);
});

describe('an answer cut off after the downstream received it', () => {
  it('is found in the task it continued (GetTask) and followed, not sent to it again', async () => {
    const { gw, proxy, close } = await throughProxy('remote-resend-answer', { binding: 'jsonrpc', streaming: true, cutSend: 2, cut: 'after-delivery' });
    try {
      const asked = await send(gw, 'ask');
      expect(asked.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      const answered = await send(gw, 'Ada', asked.id);
      expect(proxy.cuts).toBe(1);
      expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
      expect(artifactText(answered, 'answer')).toBe('Hello, Ada');

      const messageId = downstreamMessageId(`${asked.id}:2:send`);
      expect((await downstream.stats()).messages[messageId]).toBe(1);
      const steps = await stepsOf(gw, asked.id);
      expect(Object.keys(steps).sort()).toEqual(['1:send', '2:send']);
      expect(steps['2:send']?.reference).toBe(steps['1:send']?.reference);
      expect(steps['2:send']?.reference).toBe((await downstreamOf(gw, asked.id))?.taskId);
    } finally {
      await close();
    }
  }, 60_000);
});

describe('a send cut off before it reached the downstream', () => {
  it('is not found downstream, so it is sent again, once, with the same messageId', async () => {
    const { gw, proxy, close } = await throughProxy('remote-resend-undelivered', { binding: 'jsonrpc', streaming: true, cutSend: 1, cut: 'before-delivery' });
    try {
      const final = await send(gw, 'echo sent after a look');
      expect(proxy.cuts).toBe(1);
      expect(proxy.sends).toBe(2);
      expect(final.status.state).toBe('TASK_STATE_COMPLETED');
      expect(artifactText(final, 'echo')).toBe('echo sent after a look');
      const messageId = downstreamMessageId(`${final.id}:1:send`);
      expect((await downstream.stats()).messages[messageId]).toBe(1);
      const steps = await stepsOf(gw, final.id);
      expect(Object.keys(steps)).toEqual(['1:send']);
      expect(steps['1:send']?.reference).toBe((await downstreamOf(gw, final.id))?.taskId);
    } finally {
      await close();
    }
  }, 60_000);
});

describe('refused()', () => {
  const downstreamFetch = createDownstreamFetch({ credentials: undefined, requestTimeoutMs: 5_000 });

  it('is true for a refused connection (nothing was sent), as the downstream fetch reports it', async () => {
    const port = await freePort();
    const error = await downstreamFetch(`http://127.0.0.1:${port}/a2a/jsonrpc`, { method: 'POST', body: '{}' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(refused(error)).toBe(true);
  });

  it('is false for a connection closed after the request went out', async () => {
    const hangUp = createTcpServer((socket) => socket.once('data', () => socket.destroy()));
    await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve));
    try {
      const address = hangUp.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      const error = await downstreamFetch(`http://127.0.0.1:${port}/a2a/jsonrpc`, { method: 'POST', body: '{}' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Error);
      expect(refused(error)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => hangUp.close(() => resolve()));
    }
  });
});
