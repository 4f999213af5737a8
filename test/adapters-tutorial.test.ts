// docs/adapters.md, as written: its first adapter runs in the in-memory harness and behind a
// gateway that loads it from a folder of its own, and the harness does what the page says it
// does (steps replayed across runs, the budget refused past its limit, cancel firing the signal).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTestTurn, TestStepJournal, TestTurnContext } from '../adapters/testing/index.ts';
import type { Adapter, AdapterFactory } from '../adapters/types.ts';
import { DEFAULT_ADAPTER_ENVIRONMENT } from '../adapters/bounded-response.ts';
import { ROOT, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

const tutorial = readFileSync(join(ROOT, 'docs', 'adapters.md'), 'utf8');
const firstAdapter = /## A first adapter[\s\S]*?```ts\n([\s\S]*?)\n```/.exec(tutorial)?.[1] ?? '';
let dir: string;
let createAdapter: AdapterFactory;

beforeAll(async () => {
  expect(firstAdapter).toContain('export function createAdapter');
  dir = mkdtempSync(join(tmpdir(), 'a2a-tutorial-'));
  writeFileSync(join(dir, 'shout-adapter.ts'), firstAdapter);
  ({ createAdapter } = (await import(join(dir, 'shout-adapter.ts'))) as { createAdapter: AdapterFactory });
});

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('the first adapter of docs/adapters.md', () => {
  it('runs a turn in the harness', async () => {
    const { outcome, context } = await runTestTurn(await createAdapter({ suffix: '!' }, DEFAULT_ADAPTER_ENVIRONMENT), { input: 'hello', budget: 100 });
    expect(outcome.state).toBe('completed');
    expect(context.chunks.at(-1)?.lastChunk).toBe(true);
    expect(context.artifacts[0]?.parts[0]).toEqual({ text: 'HELLO!' });
  });

  describe('loaded by a gateway from its own folder, as A2A_ADAPTER names it', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway({ name: 'tutorial', config: { adapter: join(dir, 'shout-adapter.ts'), adapterOptions: { suffix: '!' } } });
    });
    afterAll(async () => {
      await gw?.close();
    });

    it('answers a message', async () => {
      const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('hello') });
      const task = (reply.body.result as { task: { status: { state: string }; artifacts: { parts: { text: string }[] }[] } }).task;
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(task.artifacts[0]?.parts[0]?.text).toBe('HELLO!');
    });
  });
});

describe('the harness the page describes', () => {
  const spender = (units: number): Adapter => ({
    name: 'spender',
    version: '1.0.0',
    skills: [],
    async run(ctx) {
      await ctx.budget.charge(units, 'calls');
      return { state: 'completed', message: `spent ${ctx.budget.spent()}` };
    },
  });

  it('enforces the budget: the charge that passes it rejects', async () => {
    expect((await runTestTurn(spender(100), { input: 'go', budget: 100 })).outcome).toMatchObject({ message: 'spent 100' });
    await expect(runTestTurn(spender(101), { input: 'go', budget: 100 })).rejects.toMatchObject({ name: expect.stringMatching(/Budget/) });
  });

  it('plays CancelTask: context.cancel() fires the adapter signal', async () => {
    const waiter: Adapter = {
      name: 'waiter',
      version: '1.0.0',
      skills: [],
      run: (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => resolve({ state: 'failed', message: 'stopped' }), { once: true });
        }),
    };
    const context = new TestTurnContext({ input: 'wait' });
    const running = waiter.run(context);
    context.cancel();
    expect(await running).toMatchObject({ state: 'failed', message: 'stopped' });
    // An outside signal (a test's own cancel) reaches it the same way.
    const controller = new AbortController();
    const viaSignal = runTestTurn(waiter, { input: 'wait', signal: controller.signal });
    controller.abort();
    expect((await viaSignal).outcome).toMatchObject({ state: 'failed', message: 'stopped' });
  });

  it('replays a finished step for a second run and hands an interrupted one over as unknown', async () => {
    let charges = 0;
    const payer: Adapter = {
      name: 'payer',
      version: '1.0.0',
      skills: [],
      async run(ctx) {
        const first = await ctx.step('charge-1', async () => ++charges);
        const second = await ctx.step('charge-2', async () => ++charges);
        return { state: 'completed', message: `${first.status}/${second.status}` };
      },
    };
    const journal = new TestStepJournal();
    await runTestTurn(payer, { input: 'pay', journal });
    expect((await runTestTurn(payer, { input: 'pay', journal, attempt: 2 })).outcome).toMatchObject({ message: 'done/done' });
    expect(charges).toBe(2);
    journal.records.delete('charge-2');
    journal.interrupt('charge-2', 'test-task:1:charge-2');
    expect((await runTestTurn(payer, { input: 'pay', journal, attempt: 3 })).outcome).toMatchObject({ message: 'done/unknown' });
    expect(charges).toBe(2);
  });
});
