// Invariant 9 (versions are pinned) and the operator's view of a task.
import { Agents } from '../src/agents/agents.ts';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatInspection, inspectTask } from '../src/cli/inspect.ts';
import { createLogger } from '../src/logging/logger.ts';
import { isCompatibleAdapter } from '../src/runtime/version-policy.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { GATEWAY_VERSION } from '../src/version.ts';
import { nodeEntryArgs } from './support/compiled-sources.ts';
import { REDIS_URL, ROOT, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

const execFileAsync = promisify(execFile);
type TaskJson = { id: string; status: { state: string; message?: { parts: { text?: string }[] } } };

let gw: TestGateway;
let worker: WorkerHandle | undefined;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'versions', inProcessWorker: false });
});

afterAll(async () => {
  await worker?.close();
  await gw?.close();
});

async function send(text: string): Promise<TaskJson> {
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } });
  return (reply.body.result as { task: TaskJson }).task;
}

async function finalTask(id: string): Promise<TaskJson> {
  return waitFor(async () => {
    const task = (await rpc(gw.jsonRpcUrl, 'GetTask', { id })).body.result as TaskJson;
    return ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'].includes(task.status.state) ? task : undefined;
  }, 20_000, `task ${id} to finish`);
}

describe('adapter compatibility', () => {
  it('is the same adapter name and semver major (minor for 0.x)', () => {
    expect(isCompatibleAdapter('demo@1.0.0', 'demo@1.4.2')).toBe(true);
    expect(isCompatibleAdapter('demo@1.0.0', 'demo@2.0.0')).toBe(false);
    expect(isCompatibleAdapter('demo@0.3.0', 'demo@0.3.9')).toBe(true);
    expect(isCompatibleAdapter('demo@0.3.0', 'demo@0.4.0')).toBe(false);
    expect(isCompatibleAdapter('demo@1.0.0', 'upper-echo@1.0.0')).toBe(false);
  });
});

describe('versions are pinned', () => {
  it('records the versions a task started under, and a worker with an incompatible adapter refuses it with a reason', async () => {
    const pinned = await send('echo pinned');
    const compatible = await send('echo fine');
    const versionsKey = (id: string): string => `${gw.prefix}:{${id}}:task`;
    const recorded = JSON.parse((await gw.redis.hget(versionsKey(pinned.id), 'versions')) as string) as Record<string, string>;
    expect(recorded).toEqual({ gateway: GATEWAY_VERSION, adapter: 'demo@1.0.0', card: gw.config.agentVersion });

    // As if the task had been started by a gateway running demo 2.x.
    await gw.redis.hset(versionsKey(pinned.id), 'versions', JSON.stringify({ ...recorded, adapter: 'demo@2.0.0' }));
    worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), createLogger('silent'));

    const refused = await finalTask(pinned.id);
    expect(refused.status.state).toBe('TASK_STATE_FAILED');
    expect(refused.status.message?.parts[0]?.text).toMatch(/started under adapter demo@2\.0\.0; this worker runs demo@1\.0\.0/);
    expect((await finalTask(compatible.id)).status.state).toBe('TASK_STATE_COMPLETED');
  });
});

describe('tasks inspect', () => {
  it('explains a finished task: versions, lease, turns with attempts, worker, steps and outcome', async () => {
    worker ??= await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), createLogger('silent'));
    const task = await send('long 3');
    expect((await finalTask(task.id)).status.state).toBe('TASK_STATE_COMPLETED');

    const inspection = await inspectTask(gw.redis, gw.prefix, task.id);
    expect(inspection?.state).toBe('TASK_STATE_COMPLETED');
    expect(inspection?.lease.holder).toBeUndefined();
    expect(inspection?.versions?.adapter).toBe('demo@1.0.0');
    expect(inspection?.turns).toHaveLength(1);
    expect(inspection?.turns[0]).toMatchObject({ turn: 1, attempts: 1, outcome: 'TASK_STATE_COMPLETED', workerId: worker.runner.workerId });
    expect(inspection?.turns[0]?.steps?.map((s) => s.name)).toEqual(['step-1', 'step-2', 'step-3']);
    expect(inspection?.expiresInSeconds).toBeGreaterThan(0);
    expect(formatInspection(inspection as NonNullable<typeof inspection>)).toMatch(/turn 1: TASK_STATE_COMPLETED, attempts 1/);

    // The same through the command line, as an operator runs it.
    const { stdout } = await execFileAsync(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'tasks', 'inspect', task.id, '--json'], {
      cwd: ROOT,
      env: { ...process.env, A2A_REDIS_URL: REDIS_URL, A2A_KEY_PREFIX: gw.prefix },
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toMatchObject({ taskId: task.id, state: 'TASK_STATE_COMPLETED', turns: [{ turn: 1 }] });
  });

  it('says so when the task does not exist', async () => {
    const run = execFileAsync(process.execPath, [...nodeEntryArgs('src/cli/main.ts'), 'tasks', 'inspect', 'no-such-task'], {
      cwd: ROOT,
      env: { ...process.env, A2A_REDIS_URL: REDIS_URL, A2A_KEY_PREFIX: gw.prefix },
      timeout: 30_000,
    });
    await expect(run).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('no task no-such-task') });
  });
});
