// Invariant 10, down to the Redis commands: CancelTask and a follow-up message for another
// owner's task take exactly the path of a task that does not exist (one read, then
// TaskNotFound), so neither the answer nor its cost tells the caller that the task exists. On a
// single Redis a follow-up's read is the first command of its one call (the owner's claim and the
// accept joined, acceptClaimedMessage), which stops there.
// Watched with MONITOR on the real Redis, counting the commands that name the task.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecentTaskIndex } from '../src/store/recent-tasks.ts';
import { REDIS_URL, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let gw: TestGateway;
let issuer: TestIssuer;
let monitor: Redis;
let aliceTaskId: string;

beforeAll(async () => {
  issuer = await createTestIssuer();
  gw = await startTestGateway({ name: 'owner-lookup', config: { auth: { enabled: true, issuers: [issuer.config] } } });
  const sent = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('dialogue') }, { Authorization: `Bearer ${await issuer.token({ sub: 'alice' })}` });
  aliceTaskId = ((sent.body.result as Json).task as Json).id as string;
  monitor = new Redis(REDIS_URL);
});

afterAll(async () => {
  monitor?.disconnect();
  await gw?.close();
});

/** The Redis commands that name `taskId` while `run` runs. */
async function commandsNaming(taskId: string, run: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  // The recent-tasks index is written a moment after the changes it records: what earlier
  // requests noted is written now, so that only what `run` causes is counted.
  await RecentTaskIndex.flushAll();
  // ioredis takes a MONITOR line that lands while the connection enters or leaves monitoring
  // for a reply and reports a "Command queue state error"; on a Redis shared with other suites
  // (their commands are MONITOR lines too) that happens. Those lines come before the request is
  // sent or after it was answered (the waits below), so they are not the ones counted: the
  // error is listened for from before the connection exists (monitor() would attach too late).
  const feed = monitor.duplicate({ monitor: true, lazyConnect: true });
  feed.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    feed.once('monitoring', () => resolve());
    feed.connect().catch(reject);
  });
  feed.on('monitor', (_time: string, args: string[]) => {
    if (args.some((arg) => arg.includes(taskId))) seen.push(String(args[0]).toLowerCase());
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  await run();
  await new Promise((resolve) => setTimeout(resolve, 200));
  feed.disconnect();
  return seen;
}

describe("another owner's task costs what a missing one does", () => {
  it('CancelTask: the same single read, the same TaskNotFound', async () => {
    const mallory = { Authorization: `Bearer ${await issuer.token({ sub: 'mallory' })}` };
    const missingId = '01JZZZZZZZZZZZZZZZZZZZZZZZ';
    let theirs: Json = {};
    let missing: Json = {};
    const forTheirs = await commandsNaming(aliceTaskId, async () => {
      theirs = (await rpc(gw.jsonRpcUrl, 'CancelTask', { id: aliceTaskId }, mallory)).body;
    });
    const forMissing = await commandsNaming(missingId, async () => {
      missing = (await rpc(gw.jsonRpcUrl, 'CancelTask', { id: missingId }, mallory)).body;
    });
    expect((theirs.error as Json).code).toBe(-32001);
    expect((missing.error as Json).code).toBe(-32001);
    expect(forTheirs).toEqual(forMissing);
    expect(forTheirs).toEqual(['hmget']);
  });

  it('a follow-up message: the same single read, the same TaskNotFound', async () => {
    const mallory = { Authorization: `Bearer ${await issuer.token({ sub: 'mallory' })}` };
    const missingId = '01JYYYYYYYYYYYYYYYYYYYYYYY';
    const followUp = (taskId: string) => rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage('my name is mallory', { taskId }) }, mallory);
    let theirs: Json = {};
    let missing: Json = {};
    // The script's first call on a Redis whose cache lacks it goes EVALSHA, then EVAL: not counted.
    await followUp('01JXXXXXXXXXXXXXXXXXXXXXXX');
    const forTheirs = await commandsNaming(aliceTaskId, async () => {
      theirs = (await followUp(aliceTaskId)).body;
    });
    const forMissing = await commandsNaming(missingId, async () => {
      missing = (await followUp(missingId)).body;
    });
    expect((theirs.error as Json).code).toBe(-32001);
    expect((missing.error as Json).code).toBe(-32001);
    expect(forTheirs).toEqual(forMissing);
    expect(forTheirs).toEqual(['evalsha', 'hmget']);
  });
});
