// A later attempt of a turn whose earlier attempt already got (and paid for) the whole reply
// ends the turn with that reply: no second model call, no second charge. The window this
// covers (reply kept, worker lost before the turn was stored) is too narrow to hit with a real
// SIGKILL, so the adapter runs here with a recording context against the local model server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { questionOf } from '../adapters/openai/ask-user.ts';
import { createOpenAIAdapter } from '../adapters/openai/index.ts';
import type { AdapterContext, ArtifactChunk, TurnUsage } from '../adapters/types.ts';
import type { JsonValue, Message } from '../src/protocol/types.ts';
import { startFakeOpenAIServer, type FakeOpenAIServer } from './support/fake-openai-server.ts';

let fake: FakeOpenAIServer;

beforeAll(async () => {
  fake = await startFakeOpenAIServer();
});

afterAll(async () => {
  await fake?.close();
});

interface Recorded {
  chunks: ArtifactChunk[];
  usage: TurnUsage[];
  charges: number[];
}

/** A context that records what the adapter does; `state` plays the task's adapterState. */
function context(text: string, turn: number, attempt: number, state: Map<string, JsonValue>, recorded: Recorded): AdapterContext {
  const input: Message[] = [{ messageId: `in-${turn}-${attempt}`, role: 'ROLE_USER', parts: [{ text }] }];
  let spent = 0;
  return {
    taskId: 'task-1',
    contextId: 'ctx-1',
    turn,
    attempt,
    input,
    history: [],
    artifacts: [],
    requestedSkill: undefined,
    signal: new AbortController().signal,
    resumed: false,
    emitStatus: async () => undefined,
    emitArtifact: async (chunk) => {
      recorded.chunks.push(chunk);
    },
    recordStep: async () => undefined,
    recordUsage: async (usage) => {
      recorded.usage.push(usage);
    },
    contextHistory: async () => [],
    step: async () => {
      throw new Error('not used');
    },
    delegate: async () => {
      throw new Error('not used');
    },
    budget: {
      limit: undefined,
      spent: () => spent,
      charge: async (units) => {
        spent += units;
        recorded.charges.push(units);
      },
    },
    adapterState: {
      get: async <T extends JsonValue = JsonValue>(key: string) => state.get(key) as T | undefined,
      set: async (key, value) => {
        state.set(key, value);
      },
    },
  };
}

describe('a turn re-run after its reply was kept', () => {
  it('ends with the kept outcome, without calling the model or charging again', async () => {
    const openai = createOpenAIAdapter({ baseURL: fake.baseURL, model: 'fake-model' });
    const state = new Map<string, JsonValue>();
    const first: Recorded = { chunks: [], usage: [], charges: [] };
    const outcome = await openai.run(context('ask kept', 1, 1, state, first));
    expect(outcome).toEqual({ state: 'input-required', message: 'What is your name?' });
    expect(fake.requestsFor('ask kept')).toHaveLength(1);
    expect(first.charges).toHaveLength(1);

    const second: Recorded = { chunks: [], usage: [], charges: [] };
    expect(await openai.run(context('ask kept', 1, 2, state, second))).toEqual(outcome);
    expect(fake.requestsFor('ask kept')).toHaveLength(1);
    expect(second).toEqual({ chunks: [], usage: [], charges: [] });
  });

  it('a kept reply of an earlier turn is not this turn’s: the model is called', async () => {
    const openai = createOpenAIAdapter({ baseURL: fake.baseURL, model: 'fake-model' });
    const state = new Map<string, JsonValue>();
    await openai.run(context('turn one', 1, 1, state, { chunks: [], usage: [], charges: [] }));
    const again: Recorded = { chunks: [], usage: [], charges: [] };
    const outcome = await openai.run(context('turn two', 2, 2, state, again));
    expect(outcome).toEqual({ state: 'completed', message: 'You said: turn two' });
    expect(fake.requestsFor('turn two')).toHaveLength(1);
    expect(again.charges).toHaveLength(1);
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
