// A blocking follow-up watches its task from before the accept (TaskEvents.watchFollowUpTurnEnd):
// what it hears before the accept answers is held, and only what comes after the accept's own
// event can end the wait; held past its bound, it reads the buffer after that event instead.
// And end to end: a dialogue's answer comes with the task its final event carried, cut to the
// history length asked, as a read of the task gives it. Real scripts on a Redis of this suite's own.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Owner } from '../src/store/task-store.ts';
import type { TaskRead } from '../src/store/task-read.ts';
import { HELD_CHARS_MAX, HELD_EVENTS_MAX } from '../src/events/held-feed.ts';
import { TaskEvents } from '../src/tasks/task-events.ts';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { bufferIds as suiteBufferIds, leasedTask, useHubSuite } from './support/hub-suite.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'follow-up-watch' };
const suite = useHubSuite('fw');
let events: TaskEvents;

beforeAll(() => {
  events = new TaskEvents(suite.hub, suite.store);
});

/** A task under a lease, and a way to append status events to it (each stands for whatever its turn publishes). */
async function runningTask(): Promise<{ taskId: string; append: (count: number, textChars?: number) => Promise<void> }> {
  const taskId = `t-${randomBytes(6).toString('hex')}`;
  return { taskId, append: await leasedTask(suite.store, owner, taskId) };
}

const bufferIds = (taskId: string): Promise<string[]> => suiteBufferIds(suite, taskId);

/** Whether `done` settled within `ms`. */
async function settledWithin(done: Promise<TaskRead | undefined>, ms: number): Promise<boolean> {
  return Promise.race([done.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
}

describe('a follow-up watched from before its accept', () => {
  it('ends at the first status after the accept’s own event, not at one heard before it, reading no buffer', async () => {
    const { taskId, append } = await runningTask();
    const readsBefore = suite.reads;
    // Any status ends this wait: only where it stands against the accept's event decides.
    const watch = events.watchFollowUpTurnEnd(taskId, 10_000, () => true);
    await append(3); // heard before "the accept" answered: held
    const ids = await bufferIds(taskId);
    await new Promise((resolve) => setTimeout(resolve, 100));
    watch.from(ids.at(-1) as string);
    expect(await settledWithin(watch.done, 200)).toBe(false);
    await append(1);
    expect(await settledWithin(watch.done, 5_000)).toBe(true);
    expect(suite.reads - readsBefore).toBe(0);
    expect(suite.hub.listenerCount(taskId)).toBe(0);
  });

  it('ends at once on a status it held that came after the accept’s own event', async () => {
    const { taskId, append } = await runningTask();
    const watch = events.watchFollowUpTurnEnd(taskId, 10_000, () => true);
    await append(2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const ids = await bufferIds(taskId);
    watch.from(ids.at(-2) as string);
    expect(await settledWithin(watch.done, 1_000)).toBe(true);
  });

  it(`holding more than ${HELD_EVENTS_MAX} events, lets them go and reads the buffer after the accept's event`, async () => {
    const { taskId, append } = await runningTask();
    const readsBefore = suite.reads;
    const watch = events.watchFollowUpTurnEnd(taskId, 10_000, () => true);
    await append(HELD_EVENTS_MAX + 4);
    await waitFor(() => (suite.hub.listenerCount(taskId) === 0 ? true : undefined), 5_000, 'the watch to let go');
    const ids = await bufferIds(taskId);
    // Nothing after the accept's event yet: the read finds no end, live delivery then brings it.
    watch.from(ids.at(-1) as string);
    expect(await settledWithin(watch.done, 200)).toBe(false);
    expect(suite.reads - readsBefore).toBeGreaterThan(0);
    await append(1);
    expect(await settledWithin(watch.done, 5_000)).toBe(true);
  });

  it(`holding more than ${HELD_CHARS_MAX} characters in fewer events, lets them go too`, async () => {
    const { taskId, append } = await runningTask();
    const watch = events.watchFollowUpTurnEnd(taskId, 10_000, () => true);
    const eventChars = 60_000;
    const count = Math.ceil(HELD_CHARS_MAX / eventChars) + 1;
    expect(count).toBeLessThan(HELD_EVENTS_MAX);
    await append(count, eventChars);
    await waitFor(() => (suite.hub.listenerCount(taskId) === 0 ? true : undefined), 5_000, 'the watch to let go');
    watch.from((await bufferIds(taskId)).at(-1) as string);
    await append(1);
    expect(await settledWithin(watch.done, 5_000)).toBe(true);
  });

  it('canceled (the message did not resume the task), frees its listener at once', async () => {
    const { taskId } = await runningTask();
    const watch = events.watchFollowUpTurnEnd(taskId, 10_000, () => true);
    expect(suite.hub.listenerCount(taskId)).toBe(1);
    watch.cancel();
    expect(suite.hub.listenerCount(taskId)).toBe(0);
    expect(await watch.done).toBeUndefined();
  });
});

describe('a dialogue answered by a blocking follow-up', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({ name: 'follow-up-watch' });
  });

  afterAll(async () => {
    await gw?.close();
  });

  const ask = async (): Promise<string> => {
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('dialogue') });
    return (body.result as { task: { id: string } }).task.id;
  };

  interface Answered {
    id: string;
    status: { state: string };
    history?: { role: string; parts: { text?: string }[] }[];
    artifacts?: unknown[];
  }

  it.each([
    { asked: undefined, expected: 4 },
    { asked: 2, expected: 2 },
    { asked: 0, expected: 0 },
  ])('answers with the task as a read gives it, history cut to $asked', async ({ asked, expected }) => {
    const taskId = await ask();
    const configuration = asked === undefined ? {} : { configuration: { historyLength: asked } };
    const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('Ada', { taskId }), ...configuration });
    const answered = (body.result as { task: Answered }).task;
    expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
    expect(answered.history ?? []).toHaveLength(expected);
    const read = await rpc(gw.jsonRpcUrl, 'GetTask', { id: taskId, ...(asked === undefined ? {} : { historyLength: asked }) });
    expect(answered).toEqual((read.body.result as Answered));
  });
});
