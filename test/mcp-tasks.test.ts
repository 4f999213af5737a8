// MCP calls that outlive what carried them, with the official MCP client SDK and real worker
// processes: a call made as an MCP task is fetched by another client after the first one left;
// a worker SIGKILLed in the middle of a plain tool call still gives that call its result (the
// turn is recovered by another worker); an MCP task is cancelled through the A2A task.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isRunning, spawnWorkerProcess, startTestGateway, stopWorkerProcesses, waitFor, type TestGateway, type WorkerProcess } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

const WORKER_ENV = { A2A_ADAPTER_OPTIONS: '{"stepMs":100}' };

let gw: TestGateway;
let issuer: TestIssuer;
let token: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({ name: 'mcp-tasks', inProcessWorker: false, config: { auth: { enabled: true, issuers: [issuer.config] } } });
  token = await issuer.token({ sub: 'mcp-tasks-user' });
  workers.push(await spawnWorkerProcess(gw.prefix, WORKER_ENV));
});

afterEach(async () => {
  // Each test starts with one live worker.
  if (!workers.some(isRunning)) workers.push(await spawnWorkerProcess(gw.prefix, WORKER_ENV));
});

afterAll(async () => {
  await stopWorkerProcesses(workers);
  await gw?.close();
});

async function connect(t = token): Promise<Client> {
  const client = new Client({ name: 'mcp-tasks-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${t}` } } }));
  return client;
}

const textOf = (result: CallToolResult): string => result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

async function startAsTask(client: Client, message: string): Promise<string> {
  const created = await client.request({ method: 'tools/call', params: { name: 'default', arguments: { message }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
  expect(created.task.status).toBe('working');
  return created.task.taskId;
}

describe('a tool call as an MCP task', () => {
  it('is fetched by a new client after the first one disconnected', async () => {
    const first = await connect();
    const taskId = await startAsTask(first, 'long 30');
    // The first client starts waiting for the result, then goes away in the middle of the wait.
    const leaving = new AbortController();
    const abandoned = first.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { signal: leaving.signal });
    await new Promise((resolve) => setTimeout(resolve, 300));
    leaving.abort();
    await expect(abandoned).rejects.toThrow();
    await first.close();

    const second = await connect();
    try {
      const task = await second.experimental.tasks.getTask(taskId);
      expect(task.taskId).toBe(taskId);
      expect(['working', 'completed']).toContain(task.status);
      expect((await second.experimental.tasks.listTasks()).tasks.map((listed) => listed.taskId)).toContain(taskId);
      // Waiting on the result, the new client gets the task's progress.
      const lines: string[] = [];
      const result = await second.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { onprogress: (progress) => lines.push(progress.message ?? '') });
      expect(result.isError).toBe(false);
      expect(textOf(result)).toMatch(/^Completed 30 steps/);
      expect(lines.some((line) => /^TASK_STATE_WORKING: progress \d+\/30$/.test(line))).toBe(true);
      expect((await second.experimental.tasks.getTask(taskId)).status).toBe('completed');
    } finally {
      await second.close();
    }

    // The task is its owner's: another subject's client does not find it.
    const stranger = await connect(await issuer.token({ sub: 'someone-else' }));
    try {
      await expect(stranger.experimental.tasks.getTask(taskId)).rejects.toThrow(/not found/i);
    } finally {
      await stranger.close();
    }
  });

  it('is cancelled through its A2A task', async () => {
    const client = await connect();
    try {
      const taskId = await startAsTask(client, 'long 200');
      const cancelled = await client.experimental.tasks.cancelTask(taskId);
      expect(cancelled.status).toBe('cancelled');
      const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      expect(result.isError).toBe(true);
      expect((result.structuredContent as { state: string }).state).toBe('TASK_STATE_CANCELED');
    } finally {
      await client.close();
    }
  });
});

describe('a worker killed in the middle of a tool call', () => {
  it('still gives the call its result: another worker recovers the turn', async () => {
    const client = await connect();
    try {
      let progressed = 0;
      const call = client.callTool({ name: 'default', arguments: { message: 'long 20' } }, CallToolResultSchema, {
        onprogress: () => {
          progressed += 1;
        },
        timeout: 120_000,
      });
      await waitFor(() => (progressed >= 3 ? true : undefined), 30_000, 'the turn to make progress');
      const killed = workers.find(isRunning) as WorkerProcess;
      killed.kill('SIGKILL');
      await killed.exited;
      workers.push(await spawnWorkerProcess(gw.prefix, WORKER_ENV));
      const result = (await call) as CallToolResult;
      expect(result.isError).toBe(false);
      expect((result.structuredContent as { state: string }).state).toBe('TASK_STATE_COMPLETED');
      // The report says which attempt finished: not the first, which died with its worker.
      expect(textOf(result)).toMatch(/^Completed 20 steps in \d+ ms \(attempt [2-9]\)/);
    } finally {
      await client.close();
    }
  }, 120_000);
});
