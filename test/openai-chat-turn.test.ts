// A later attempt of a turn whose earlier attempt already got (and paid for) the whole reply
// ends the turn with that reply: no second model call, no second charge. The window this
// covers (reply kept, worker lost before the turn was stored) is too narrow to hit with a real
// SIGKILL, so the adapter runs here in the adapter-testing harness against the local model server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { questionOf } from '../adapters/openai/ask-user.ts';
import { createOpenAIAdapter } from '../adapters/openai/index.ts';
import { TestTurnContext } from '../adapters/testing/index.ts';
import type { JsonValue } from '../src/protocol/types.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';

let fake: FakeOpenAIServer;

beforeAll(async () => {
  fake = await startFakeOpenAIServer();
});

afterAll(async () => {
  await fake?.close();
});

/** The adapter-testing harness: `state` plays the task's adapterState across runs. */
const context = (text: string, turn: number, attempt: number, state: Map<string, JsonValue>): TestTurnContext =>
  new TestTurnContext({ input: text, turn, attempt, adapterState: state, taskId: 'task-1', contextId: 'ctx-1', adapterName: 'openai' });

describe('a turn re-run after its reply was kept', () => {
  it('ends with the kept outcome, without calling the model or charging again', async () => {
    const openai = createOpenAIAdapter({ baseURL: fake.baseURL, model: 'fake-model' });
    const state = new Map<string, JsonValue>();
    const first = context('ask kept', 1, 1, state);
    const outcome = await openai.run(first);
    expect(outcome).toEqual({ state: 'input-required', message: 'What is your name?' });
    expect(fake.requestsFor('ask kept')).toHaveLength(1);
    expect(first.budget.spent()).toBeGreaterThan(0);

    const second = context('ask kept', 1, 2, state);
    expect(await openai.run(second)).toEqual(outcome);
    expect(fake.requestsFor('ask kept')).toHaveLength(1);
    expect([second.chunks, second.usage, second.budget.spent()]).toEqual([[], [], 0]);
  });

  it('a kept reply of an earlier turn is not this turn’s: the model is called', async () => {
    const openai = createOpenAIAdapter({ baseURL: fake.baseURL, model: 'fake-model' });
    const state = new Map<string, JsonValue>();
    await openai.run(context('turn one', 1, 1, state));
    const again = context('turn two', 2, 2, state);
    const outcome = await openai.run(again);
    expect(outcome).toEqual({ state: 'completed', message: 'You said: turn two' });
    expect(fake.requestsFor('turn two')).toHaveLength(1);
    expect(again.budget.spent()).toBeGreaterThan(0);
    expect(again.chunks.at(-1)).toMatchObject({ artifactId: 'reply-2', lastChunk: true });
  });
});

describe('the question of an ask_user call', () => {
  it('is its question argument; bare text arguments are the question; an empty call falls back to the reply text, then to a generic request', () => {
    expect(questionOf({ name: 'ask_user', arguments: '{"question":" Which city? "}' }, '')).toBe('Which city?');
    expect(questionOf({ name: 'ask_user', arguments: 'Which city?' }, '')).toBe('Which city?');
    expect(questionOf({ name: 'ask_user', arguments: '"Which city?"' }, '')).toBe('Which city?');
    expect(questionOf({ name: 'ask_user', arguments: '{}' }, 'I need the city. ')).toBe('I need the city.');
    expect(questionOf({ name: 'ask_user', arguments: '' }, '')).toMatch(/needs more information/);
  });
});
