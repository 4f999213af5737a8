// A later attempt of a turn whose earlier attempt already got (and paid for) the whole reply
// ends the turn with that reply: no second model call, no second charge. The window this
// covers (reply kept, worker lost before the turn was stored) is too narrow to hit with a real
// SIGKILL, so the adapter runs here in the adapter-testing harness against the local model server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { questionOf } from '../adapters/openai/ask-user.ts';
import { createOpenAIAdapter } from '../adapters/openai/index.ts';
import { TestTurnContext } from '../adapters/testing/index.ts';
import type { ArtifactChunk } from '../adapters/types.ts';
import { applyArtifactChunk } from '../src/runtime/turn-context.ts';
import type { Artifact, JsonValue } from '../src/protocol/types.ts';
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

/** The artifact updates the runtime announces for these chunks (each carries the merged artifact's name and metadata). */
function announced(chunks: readonly ArtifactChunk[], stored: readonly Artifact[]): string[] {
  const artifacts = structuredClone([...stored]);
  return chunks.map((chunk) => JSON.stringify({ ...applyArtifactChunk(artifacts, chunk), parts: chunk.parts, append: chunk.append === true, lastChunk: chunk.lastChunk === true }));
}

describe('a turn re-run after its whole reply was stored but not kept', () => {
  // Found by the chaos suite: the lost attempt had stored its reply to the last chunk, its worker
  // died before the outcome was kept, and the new attempt's last chunk repeated the lost one's
  // word for word: the same event twice in the task's replay buffer.
  it('announces no event equal to one of the lost attempt’s, its last chunk included', async () => {
    const openai = createOpenAIAdapter({ baseURL: fake.baseURL, model: 'fake-model' });
    const lost = context('words=3', 1, 1, new Map());
    await openai.run(lost);
    const again = new TestTurnContext({ input: 'words=3', turn: 1, attempt: 2, artifacts: lost.artifacts, taskId: 'task-1', contextId: 'ctx-1', adapterName: 'openai' });
    await openai.run(again);
    expect(fake.requestsFor('words=3')).toHaveLength(2);
    expect(again.chunks.at(-1)).toMatchObject({ lastChunk: true, metadata: { attempt: 2, replacesEarlierAttempt: true, finishReason: 'stop' } });
    const earlier = new Set(announced(lost.chunks, []));
    expect(announced(again.chunks, lost.artifacts).filter((event) => earlier.has(event))).toEqual([]);
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
