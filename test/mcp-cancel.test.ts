// Cancelling over MCP cancels the A2A task, with the official MCP client SDK: a client aborting a
// tools/call in progress (its AbortSignal, which sends notifications/cancelled) and an MCP task
// cancelled with tasks/cancel both end the A2A task TASK_STATE_CANCELED through CancelTask, and
// the worker running the turn stops. The notification may reach another gateway than the call,
// may overtake the call, and only ever cancels its sender's own calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, LATEST_PROTOCOL_VERSION, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Agents } from '../src/agents/agents.ts';
import { startGatewayRole, type GatewayHandle } from '../src/gateway/server.ts';
import { createLogger } from '../src/logging/logger.ts';
import type { Task } from '../src/protocol/types.ts';
import type { TurnRecord } from '../src/store/task-store.ts';
import { ROOT, rpc, startTestGateway, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let gw: TestGateway;
let second: GatewayHandle;
let issuer: TestIssuer;
let token: string;

beforeAll(async () => {
  issuer = await createTestIssuer();
  // CancelTask waits for the running turn to stop; give a noisy machine plenty of time.
  gw = await startTestGateway({ name: 'mcp-cancel', adapterOptions: { stepMs: 50 }, config: { cancelWaitMs: 30_000, auth: { enabled: true, issuers: [issuer.config] } } });
  // A second gateway on the same Redis: the notification may reach any gateway.
  const config = { ...gw.config, port: 0 };
  second = await startGatewayRole(config, await Agents.load(config, ROOT), createLogger('silent'), { baseDir: ROOT });
  token = await issuer.token({ sub: 'mcp-cancel-user' });
});

afterAll(async () => {
  await second?.close();
  await gw?.close();
});

const bearer = (t: string): Record<string, string> => ({ Authorization: `Bearer ${t}` });

/** A client of the first gateway; its notifications/cancelled go to the second one when `cancelsElsewhere`. */
async function connect(options: { token?: string; cancelsElsewhere?: boolean } = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'mcp-cancel-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
    requestInit: { headers: bearer(options.token ?? token) },
    fetch: (url, init) => {
      const cancels = typeof init?.body === 'string' && init.body.includes('"notifications/cancelled"');
      return fetch(options.cancelsElsewhere === true && cancels ? `${second.url}/mcp` : url, init);
    },
  });
  await client.connect(transport);
  return { client, transport };
}

async function getTask(taskId: string): Promise<Task> {
  const { body } = await rpc(`${gw.url}/a2a/jsonrpc`, 'GetTask', { id: taskId }, bearer(token));
  expect(body.error).toBeUndefined();
  return body.result as Task;
}

async function eventIds(taskId: string): Promise<string[]> {
  return (await gw.redis.xrange(`${gw.prefix}:{${taskId}}:events`, '-', '+')).map(([id]) => id);
}

/** The task is CANCELED (GetTask), and the worker that ran its turn stopped it: its turn record says so and nothing is appended after. */
async function expectCancelledAndStopped(taskId: string): Promise<void> {
  await waitFor(async () => ((await getTask(taskId)).status.state === 'TASK_STATE_CANCELED' ? true : undefined), 60_000, `task ${taskId} to be canceled`);
  const record = await waitFor(
    async () => {
      const json = await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1');
      const parsed = json === null ? undefined : (JSON.parse(json) as TurnRecord);
      return parsed?.finishedAtMs === undefined ? undefined : parsed;
    },
    30_000,
    'the turn record to be finished',
  );
  expect(record.outcome).toBe('TASK_STATE_CANCELED');
  expect(record.workerId).toBeTypeOf('string');
  expect(record.steps?.length ?? 0).toBeLessThan(500);
  expect(await gw.redis.exists(`${gw.prefix}:{${taskId}}:lease`)).toBe(0);
  // A turn still running would append a step every 50 ms.
  const events = await eventIds(taskId);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(await eventIds(taskId)).toEqual(events);
}

/** Starts `long 500` (25 s) as a plain call and waits for its progress: the first line names the MCP task. */
async function startLongCall(client: Client, signal: AbortSignal): Promise<{ call: Promise<unknown>; taskId: string }> {
  const lines: string[] = [];
  const call = client.callTool({ name: 'default', arguments: { message: 'long 500' } }, CallToolResultSchema, { signal, timeout: 120_000, onprogress: (progress) => lines.push(progress.message ?? '') });
  call.catch(() => undefined);
  await waitFor(() => (lines.filter((line) => line.includes('progress')).length >= 2 ? true : undefined), 30_000, 'the call to make progress');
  const mcpTaskId = /\(MCP task ([^)]+)\)$/.exec(lines[0] ?? '')?.[1];
  expect(mcpTaskId).toMatch(/^default:/);
  return { call, taskId: (mcpTaskId as string).slice('default:'.length) };
}

/** A raw JSON-RPC message to /mcp, as the SDK would send it within a session; the SSE answer's messages. */
async function post(session: string | undefined, message: Record<string, unknown>, t = token): Promise<{ status: number; messages: Record<string, unknown>[] }> {
  const response = await fetch(`${gw.url}/mcp`, {
    method: 'POST',
    headers: { ...bearer(t), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...(session === undefined ? {} : { 'Mcp-Session-Id': session }), 'Mcp-Protocol-Version': LATEST_PROTOCOL_VERSION },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  const text = await response.text();
  const messages = text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>);
  return { status: response.status, messages };
}

const cancelled = (requestId: string): Record<string, unknown> => ({ method: 'notifications/cancelled', params: { requestId, reason: 'test' } });
const toolCall = (id: string, message: string): Record<string, unknown> => ({ id, method: 'tools/call', params: { name: 'default', arguments: { message } } });
const stateOfAnswer = (messages: Record<string, unknown>[]): string | undefined =>
  ((messages.at(-1)?.result as CallToolResult | undefined)?.structuredContent as { state?: string } | undefined)?.state;

describe('a tools/call the client cancels', () => {
  it('hands out a session id at initialize, which names the client\'s requests', async () => {
    const { client, transport } = await connect();
    try {
      expect(transport.sessionId).toMatch(/^[\x21-\x7E]{1,128}$/);
      // Nothing is kept for a session: any well-formed id is served, a malformed one refused.
      expect((await post('made-up-session', { id: 1, method: 'ping' })).status).toBe(200);
      expect((await post('bad session id', { id: 1, method: 'ping' })).status).toBe(400);
    } finally {
      await client.close();
    }
  });

  it('cancels its A2A task when the client aborts the call, and the worker stops', async () => {
    const { client } = await connect();
    try {
      const abort = new AbortController();
      const { call, taskId } = await startLongCall(client, abort.signal);
      abort.abort('the user stopped it');
      await expect(call).rejects.toThrow(/stopped it/);
      await expectCancelledAndStopped(taskId);
    } finally {
      await client.close();
    }
  }, 120_000);

  it('cancels it when the notification reaches another gateway than the call', async () => {
    const { client } = await connect({ cancelsElsewhere: true });
    try {
      const abort = new AbortController();
      const { call, taskId } = await startLongCall(client, abort.signal);
      abort.abort();
      await expect(call).rejects.toThrow();
      await expectCancelledAndStopped(taskId);
    } finally {
      await client.close();
    }
  }, 120_000);

  it('cancels it when the notification overtook the call', async () => {
    const session = `overtaken-${Date.now()}`;
    expect((await post(session, cancelled('call-1'))).status).toBe(202);
    const answer = await post(session, toolCall('call-1', 'long 500'));
    expect(answer.status).toBe(200);
    expect(stateOfAnswer(answer.messages)).toBe('TASK_STATE_CANCELED');
    expect((answer.messages.at(-1)?.result as CallToolResult).isError).toBe(true);
    const { taskId } = (answer.messages.at(-1)?.result as CallToolResult).structuredContent as { taskId: string };
    expect((await getTask(taskId)).status.state).toBe('TASK_STATE_CANCELED');
  }, 120_000);

  it('never cancels another caller\'s call, whatever session and request id it names', async () => {
    const session = `shared-${Date.now()}`;
    const stranger = await issuer.token({ sub: 'someone-else' });
    expect((await post(session, cancelled('call-1'), stranger)).status).toBe(202);
    const answer = await post(session, toolCall('call-1', 'long 5'));
    expect(stateOfAnswer(answer.messages)).toBe('TASK_STATE_COMPLETED');
    // Without a session id, whose request a notification means is unknown: it cancels nothing.
    expect((await post(undefined, cancelled('call-2'))).status).toBe(202);
    expect(stateOfAnswer((await post(undefined, toolCall('call-2', 'long 5'))).messages)).toBe('TASK_STATE_COMPLETED');
  }, 60_000);
});

describe('an MCP task cancelled with tasks/cancel', () => {
  it('cancels its A2A task, and the worker stops', async () => {
    const { client } = await connect();
    try {
      const created = await client.request({ method: 'tools/call', params: { name: 'default', arguments: { message: 'long 500' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      const taskId = created.task.taskId.slice('default:'.length);
      await waitFor(async () => ((await getTask(taskId)).status.state === 'TASK_STATE_WORKING' ? true : undefined), 30_000, 'the turn to start');
      const task = await client.experimental.tasks.cancelTask(created.task.taskId);
      expect(task.status).toBe('cancelled');
      await expectCancelledAndStopped(taskId);
      // A task already ended, and one that is not the caller's, are invalid params to the tasks utility.
      await expect(client.experimental.tasks.cancelTask(created.task.taskId)).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
      const stranger = await connect({ token: await issuer.token({ sub: 'someone-else' }) });
      try {
        await expect(stranger.client.experimental.tasks.getTask(created.task.taskId)).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
        await expect(stranger.client.experimental.tasks.cancelTask(created.task.taskId)).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
      } finally {
        await stranger.client.close();
      }
    } finally {
      await client.close();
    }
  }, 120_000);
});
