// A new task watched from before its creation (src/events/held-feed.ts): what it publishes
// before its stream attaches is held and delivered first, in order, with no read of the replay
// buffer; past the hold's bound, or when no stream attaches in time, the watch lets go of its
// listener and a stream that attaches later reads the buffer: every event still arrives, once,
// in order. Real scripts publish on a Redis of this suite's own, to a real hub.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HELD_EVENTS_MAX, holdTaskFeed, type HeldTaskFeed } from '../src/events/held-feed.ts';
import type { LiveEvent } from '../src/events/hub.ts';
import type { Owner } from '../src/store/task-store.ts';
import { waitFor } from './support/harness.ts';
import { bufferIds as suiteBufferIds, leasedTask, useHubSuite } from './support/hub-suite.ts';

const owner: Owner = { agent: 'default', tenant: '', subject: 'held-feed' };
const suite = useHubSuite('hf');

/** Creates the task (its creation event) and appends `steps` status events under its lease. */
async function createAndRun(taskId: string, steps: number): Promise<(more: number) => Promise<void>> {
  const append = await leasedTask(suite.store, owner, taskId);
  await append(steps);
  return append;
}

const bufferIds = (taskId: string): Promise<string[]> => suiteBufferIds(suite, taskId);

/**
 * Attaches a consumer to `feed`, runs `meanwhile` (more events, say), and waits until it holds
 * exactly what the buffer holds (and nothing trickles in after: no copy from a read and a live
 * one). Returns what it got, its ids against the buffer's, and the buffer reads it took.
 */
async function attachAndDrain(feed: HeldTaskFeed, taskId: string, meanwhile?: () => Promise<void>): Promise<{ delivered: LiveEvent[]; ids: string[]; buffer: string[]; reads: number }> {
  const readsBefore = suite.reads;
  const delivered: LiveEvent[] = [];
  const attached = feed.attach({
    afterId: '',
    onEvent: (event) => delivered.push(event),
    onError: (error) => {
      throw error;
    },
  });
  await meanwhile?.();
  const buffer = await bufferIds(taskId);
  await waitFor(() => (delivered.length >= buffer.length ? true : undefined), 10_000, `${buffer.length} events`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  attached.close();
  return { delivered, ids: delivered.map((event) => event.id), buffer, reads: suite.reads - readsBefore };
}

describe('a feed held from before its task is created', () => {
  it('delivers what the task published before the stream attached, then what follows, in order, reading no buffer', async () => {
    const taskId = `t-${randomBytes(6).toString('hex')}`;
    const feed = holdTaskFeed(suite.hub, suite.store, taskId);
    const append = await createAndRun(taskId, 3);
    // Published and heard before the stream attaches: held.
    await waitFor(async () => ((await bufferIds(taskId)).length === 5 ? true : undefined), 5_000, 'the events stored');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const got = await attachAndDrain(feed, taskId, () => append(2));
    expect(got.ids).toEqual(got.buffer);
    expect(got.ids).toHaveLength(7);
    // The same events, byte for byte, as a stream reading the buffer gets (invariant 7).
    expect(got.delivered.map((event) => event.json)).toEqual((await suite.store.gateway.readEvents(taskId, '')).map((event) => event.json));
    expect(got.delivered[0]?.json.startsWith('{"task":')).toBe(true);
    expect(got.reads).toBe(0);
    expect(suite.hub.listenerCount(taskId)).toBe(0);
  });

  it(`past ${HELD_EVENTS_MAX} events unattached, lets go of its listener; the stream then reads them all from the buffer, once, in order`, async () => {
    const taskId = `t-${randomBytes(6).toString('hex')}`;
    const feed = holdTaskFeed(suite.hub, suite.store, taskId);
    await createAndRun(taskId, HELD_EVENTS_MAX + 4);
    await waitFor(() => (suite.hub.listenerCount(taskId) === 0 ? true : undefined), 5_000, 'the watch to let go');
    const got = await attachAndDrain(feed, taskId);
    expect(got.ids).toEqual(got.buffer);
    expect(got.reads).toBeGreaterThan(0);
  });

  it('not attached in time, lets go of its listener; attached later, it reads the buffer', async () => {
    const taskId = `t-${randomBytes(6).toString('hex')}`;
    const feed = holdTaskFeed(suite.hub, suite.store, taskId, 150);
    const append = await createAndRun(taskId, 2);
    expect(suite.hub.listenerCount(taskId)).toBe(1);
    await waitFor(() => (suite.hub.listenerCount(taskId) === 0 ? true : undefined), 5_000, 'the watch to time out');
    const got = await attachAndDrain(feed, taskId, () => append(1));
    expect(got.ids).toEqual(got.buffer);
    expect(got.reads).toBeGreaterThan(0);
  });

  it('closed unattached (the call made no task of its own), frees its listener at once', async () => {
    const taskId = `t-${randomBytes(6).toString('hex')}`;
    const feed = holdTaskFeed(suite.hub, suite.store, taskId);
    expect(suite.hub.listenerCount(taskId)).toBe(1);
    feed.close();
    expect(suite.hub.listenerCount(taskId)).toBe(0);
    expect(() => feed.attach({ afterId: '', onEvent: () => undefined, onError: () => undefined })).toThrow(/attached or closed/);
  });
});
