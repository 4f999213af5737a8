// The adapter contract holds under an adapter's mistakes: what an adapter hands the runtime is
// checked at the boundary, and a violation fails the turn once, with a reason naming the
// adapter and the field, logged, never retried as if a worker had been lost.
import { Agents } from '../src/agents/agents.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger, LogFields } from '../src/logging/logger.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { ROOT, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

let gw: TestGateway;
let worker: WorkerHandle;
const logged: { level: string; message: string; fields: LogFields | undefined }[] = [];

const capture = (level: string) => (message: string, fields?: LogFields) => {
  logged.push({ level, message, fields });
};
const logger: Logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error') };

beforeAll(async () => {
  gw = await startTestGateway({ name: 'contract', inProcessWorker: false, config: { adapter: 'test/fixtures/contract-adapter.mjs', blockingTimeoutMs: 20_000 } });
  worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), logger);
});

afterAll(async () => {
  await worker?.close();
  await gw?.close();
});

interface TaskView {
  id: string;
  status: { state: string; message?: { parts: { text?: string; data?: unknown }[] } };
  artifacts?: { artifactId: string; parts: { text?: string }[] }[];
  metadata?: { a2aGateway?: { usage?: Record<string, number> } };
}

async function send(text: string, extra: Record<string, unknown> = {}): Promise<TaskView> {
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text, extra) });
  expect(reply.body.error).toBeUndefined();
  return (reply.body.result as { task: TaskView }).task;
}

const statusText = (task: TaskView): string => task.status.message?.parts.map((p) => p.text ?? '').join('') ?? '';

async function turnRecord(taskId: string): Promise<{ attempts: number; outcome: string; reason?: string; usage?: Record<string, unknown> }> {
  return JSON.parse((await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1')) as string);
}

describe('an invalid turn outcome', () => {
  it('(a misspelt state) fails the turn at once, naming the adapter and the field, logged, with one attempt', async () => {
    const started = Date.now();
    const task = await send('typo');
    // Well before blockingTimeoutMs: the task got a state, it did not hang.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/contract adapter broke the adapter contract/);
    expect(statusText(task)).toMatch(/outcome\.state/);
    expect(statusText(task)).toMatch(/"complete"|completed, input-required/);
    const record = await turnRecord(task.id);
    expect(record.attempts).toBe(1);
    expect(record.outcome).toBe('TASK_STATE_FAILED');
    // One ERROR line of the turn-failed class, its cause the contract's complaint.
    expect(logged.some((l) => l.level === 'error' && l.fields?.failure === 'turn-failed' && l.fields?.taskId === task.id && String(l.fields?.cause).includes('outcome.state'))).toBe(true);
    // A finished task expires like any other.
    expect(await gw.redis.ttl(`${gw.prefix}:{${task.id}}:task`)).toBeGreaterThan(0);
  });

  it('(run() forgot to return) says so, not that workers were lost', async () => {
    const task = await send('no-return');
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/forget to return/);
    expect(statusText(task)).not.toMatch(/workers running it were lost/);
    expect((await turnRecord(task.id)).attempts).toBe(1);
  });
});

describe('what an adapter emits is checked too', () => {
  it('a part with two kinds of content fails the turn naming the part', async () => {
    const task = await send('bad-part');
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/ctx\.emitArtifact\(\).*chunk\.parts\[0\]/);
    expect(task.artifacts ?? []).toEqual([]);
  });

  it('a violation the adapter caught and hid still fails the turn', async () => {
    const task = await send('swallowed');
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/chunk\.parts needs at least one part/);
  });

  it('a status that is not text fails the turn naming emitStatus', async () => {
    const task = await send('bad-status');
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/ctx\.emitStatus\(\).*text/);
  });
});

describe('step names', () => {
  it('reusing one within a turn throws instead of silently replaying the first step', async () => {
    const task = await send('same-step');
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/step name "charge" was already used in this turn/);
    const steps = await gw.redis.hgetall(`${gw.prefix}:{${task.id}}:steps`);
    // The first charge ran and is journalled; the second was refused before it could be skipped.
    expect(Object.keys(steps)).toEqual(['1:charge']);
    expect(JSON.parse(steps['1:charge'] as string).state).toBe('done');
  });
});

describe('the wider context', () => {
  it('an input-required question may carry data parts', async () => {
    const task = await send('form');
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(task.status.message?.parts).toEqual([{ text: 'Fill in the form' }, { data: { fields: ['name', 'email'] }, mediaType: 'application/json' }]);
  });

  it('recorded usage is totalled on the turn and shown on the task', async () => {
    const task = await send('usage');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.metadata?.a2aGateway?.usage).toEqual({ inputTokens: 15, outputTokens: 35, totalTokens: 50 });
    expect((await turnRecord(task.id)).usage).toEqual({ model: 'test-model', inputTokens: 15, outputTokens: 35 });
  });

  it("contextHistory gives the messages of the context's earlier tasks, oldest first", async () => {
    const first = await send('echo first thing');
    const second = await send('echo second thing', { contextId: (await readContext(first.id)) });
    const recall = await send('recall', { contextId: await readContext(second.id) });
    expect(recall.artifacts?.[0]?.parts[0]?.text).toBe('echo first thing | echo second thing');
    // Another context sees none of it.
    const elsewhere = await send('recall');
    expect(elsewhere.artifacts?.[0]?.parts[0]?.text).toBe('');
  });
});

describe('the caller', () => {
  it('is on the context, read-only: agent, tenant, principal and scopes', async () => {
    const task = await send('whoami');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect((task.artifacts?.[0]?.parts[0] as { data?: unknown }).data).toEqual({
      agent: 'default',
      tenant: '',
      principal: 'anonymous',
      // With authentication off the anonymous caller holds every scope, the operator ones too.
      scopes: ['a2a:read', 'a2a:write', 'a2a:push', 'a2a:operator', 'a2a:admin', 'a2a:metrics', 'a2a:platform'],
    });
    expect(statusText(task)).toBe('anonymous');
  });
});

describe('adapter state', () => {
  it('keeps a value from one turn of a task to the next', async () => {
    const asked = await send('remember');
    expect(asked.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const answered = await send('remember the answer', { taskId: asked.id });
    expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
    expect((answered.artifacts?.[0]?.parts[0] as { data?: unknown }).data).toEqual({ taskId: 'd-42', at: 1 });
    // Kept in the task hash, so it expires with the task.
    expect(await gw.redis.hget(`${gw.prefix}:{${asked.id}}:task`, 'adapter:downstream')).toBe('{"taskId":"d-42","at":1}');
  });

  it('refuses a value past its size limit, failing the turn', async () => {
    const task = await send('huge-state');
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(statusText(task)).toMatch(/more than 65536/);
  });
});

async function readContext(taskId: string): Promise<string> {
  return (await gw.redis.hget(`${gw.prefix}:{${taskId}}:task`, 'contextId')) as string;
}
