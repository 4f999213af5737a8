// ctx.logger is the gateway's log bound to the turn: every line an adapter writes carries the
// task, context, turn, attempt and agent, beside the adapter's own fields.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import type { LogFields, Logger } from '../src/logging/logger.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { ROOT, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

const ADAPTER = `export function createAdapter() {
  return {
    name: 'chatty',
    version: '1.0.0',
    skills: [],
    async run(ctx) {
      ctx.logger.info('adapter says hello', { words: 2 });
      return { state: 'completed', message: 'logged' };
    },
  };
}
`;

let dir: string;
let gw: TestGateway;
let worker: WorkerHandle;
const lines: { level: string; message: string; fields: LogFields | undefined }[] = [];
const capture = (level: string) => (message: string, fields?: LogFields) => void lines.push({ level, message, fields });
const logger: Logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error') };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'a2a-chatty-'));
  writeFileSync(join(dir, 'chatty.mjs'), ADAPTER);
  gw = await startTestGateway({ name: 'adapter-logger', inProcessWorker: false, config: { adapter: join(dir, 'chatty.mjs') } });
  worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), logger);
});

afterAll(async () => {
  await worker?.close();
  await gw?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("an adapter's ctx.logger", () => {
  it('writes to the gateway log with the task, context, turn, attempt, agent and owner on the line', async () => {
    const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('hi') });
    const task = (reply.body.result as { task: { id: string; contextId: string; status: { state: string } } }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const line = lines.find((entry) => entry.message === 'adapter says hello');
    expect(line?.level).toBe('info');
    expect(line?.fields).toEqual({ taskId: task.id, contextId: task.contextId, turn: 1, attempt: 1, agent: 'default', owner: 'default//anonymous', words: 2 });
  });
});
