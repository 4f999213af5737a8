// A task store and a live event hub on a suite's own redis-server (own-redis-suite.ts), with the
// replay-buffer reads counted: for suites of what watches a task (held feeds, follow-up waits)
// that must show which events came live and which were read back. Real scripts publish to a
// real hub; tasks are made and driven under a lease, as a turn would.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect } from 'vitest';
import { EventHub } from '../../src/events/hub.ts';
import type { StreamResponse, TaskStatus } from '../../src/protocol/types.ts';
import { ownerKeyOf, TaskStore, type Owner } from '../../src/store/task-store.ts';
import { createStoredTask } from './harness.ts';
import { useOwnRedis } from './own-redis-suite.ts';

export interface HubSuite {
  readonly redis: Redis;
  readonly store: TaskStore;
  readonly hub: EventHub;
  /** Buffer reads made so far (TaskStore.gateway.readEventsAfter). */
  readonly reads: number;
}

const unbounded = { maxEvents: 0, maxAgeMs: 0, pushHoldMaxEvents: 0, maxBytes: 0, pushHoldMaxBytes: 0 };

/** Starts the suite's Redis, store (key prefix `prefix`, no replay bound) and hub; read them from the tests on. */
export function useHubSuite(prefix: string): HubSuite {
  let redis: Redis | undefined;
  let subscriber: Redis | undefined;
  let store: TaskStore | undefined;
  let hub: EventHub | undefined;
  let reads = 0;
  useOwnRedis((client) => (redis = client));
  beforeAll(async () => {
    const client = redis as Redis;
    store = new TaskStore(client, prefix, 600, unbounded);
    const read = store.gateway.readEventsAfter.bind(store.gateway);
    store.gateway.readEventsAfter = (...args) => {
      reads += 1;
      return read(...args);
    };
    subscriber = client.duplicate();
    hub = new EventHub(subscriber, store.channels);
    await hub.start();
  });
  afterAll(async () => {
    await subscriber?.quit();
  });
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the suite's ${what} is made in beforeAll: use it from a test`);
    return value;
  };
  return {
    get redis() {
      return ready(redis, 'Redis client');
    },
    get store() {
      return ready(store, 'task store');
    },
    get hub() {
      return ready(hub, 'event hub');
    },
    get reads() {
      return reads;
    },
  };
}

/**
 * Creates the task (its creation event) under `owner`, takes its lease, and returns a function
 * that appends WORKING status updates to it, one call each (what a running turn publishes), each
 * with a message of `textChars` characters when given.
 */
export async function leasedTask(store: TaskStore, owner: Owner, taskId: string): Promise<(count: number, textChars?: number) => Promise<void>> {
  const contextId = `ctx-${taskId}`;
  const ownerKey = ownerKeyOf(owner);
  await createStoredTask(store, { taskId, contextId, owner });
  const lease = await store.turns.acquireLease({ taskId, ownerKey, contextId, workerId: 'w', leaseTtlMs: 60_000, now: new Date() });
  if (lease.kind !== 'acquired') throw new Error(`no lease: ${JSON.stringify(lease)}`);
  return async (count, textChars) => {
    for (let i = 0; i < count; i++) {
      const text = textChars === undefined ? `step ${i}` : 's'.repeat(textChars);
      const status: TaskStatus = { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString(), message: { messageId: `a-${randomBytes(4).toString('hex')}`, role: 'ROLE_AGENT', parts: [{ text }] } };
      const event: StreamResponse = { statusUpdate: { taskId, contextId, status } };
      const result = await store.turns.appendEvents({ taskId, ownerKey, contextId, generation: lease.generation, artifacts: undefined, status, events: [event], now: new Date() });
      expect(result.kind).toBe('appended');
    }
  };
}

/** The ids the task's replay buffer holds, oldest first. */
export async function bufferIds(suite: HubSuite, taskId: string): Promise<string[]> {
  return (await suite.redis.xrange(suite.store.keys.task(taskId).events, '-', '+')).map(([entryId]) => entryId);
}
