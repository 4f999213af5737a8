// One owner's backlog does not starve another owner, and one tenant's crowd of owners does not
// starve another tenant: a turn waits behind fewer turns the fewer tasks its owner has queued or
// running, and the fewer owners its tenant has busy (its queue priority), so a caller with one
// task goes ahead of the queued part of another caller's flood, or of another tenant's many
// callers' tasks. Asserted on the order turns start in, not on how long anything takes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';

let gw: TestGateway;
let issuer: TestIssuer;

beforeAll(async () => {
  issuer = await createTestIssuer();
  // Two turns at a time, so a flood of twenty queues up. Credentials name the owner (subject) and
  // tenant, so one tenant can have many owners.
  gw = await startTestGateway({
    name: 'fairness',
    config: { workerConcurrency: 2, auth: { enabled: true, issuers: [issuer.config] } },
    adapterOptions: { stepMs: 20 },
  });
});

afterAll(async () => {
  await gw?.close();
});

async function send(tenant: string, subject: string, text: string): Promise<string> {
  const token = await issuer.token({ sub: subject, tenant });
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { message: textMessage(text), configuration: { returnImmediately: true } }, { Authorization: `Bearer ${token}` });
  const task = (reply.body.result as { task?: { id: string } } | undefined)?.task;
  if (task === undefined) throw new Error(`SendMessage failed: ${JSON.stringify(reply.body)}`);
  return task.id;
}

async function startedAt(taskId: string): Promise<number | undefined> {
  const record = await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1');
  return record === null ? undefined : (JSON.parse(record) as { startedAtMs?: number }).startedAtMs;
}

/** Floods with `flood()`, then sends the victim's echo, and checks where the victim's turn started among the flood's. */
async function expectVictimAhead(flood: () => Promise<string[]>, victim: () => Promise<string>): Promise<void> {
  const flooded = await flood();
  const sentAt = Date.now();
  const victimId = await victim();
  const victimStart = await waitFor(() => startedAt(victimId), 90_000, "the victim's turn to start");
  expect(victimStart).toBeGreaterThanOrEqual(sentAt - 5);
  // The flood's turns that started between the victim's arrival and its start: at most the
  // slots that freed up in the meantime (two workers, and the one turn queued with the
  // victim's priority ahead of it), never the queued rest of the flood.
  const starts = await Promise.all(flooded.map(startedAt));
  const overtaking = starts.filter((s) => s !== undefined && s > sentAt && s < victimStart);
  expect(overtaking.length).toBeLessThanOrEqual(3);
  expect(starts.filter((s) => s === undefined || s > victimStart).length).toBeGreaterThanOrEqual(10);
  // The next case starts with the queue drained.
  await waitFor(async () => ((await Promise.all(flooded.map(startedAt))).every((s) => s !== undefined) ? true : undefined), 90_000, 'the flood to start');
}

async function inSequence(count: number, one: (i: number) => Promise<string>): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await one(i));
  return ids;
}

describe('fair share of the workers', () => {
  it("starts a second owner's task before the queued part of the first owner's flood", async () => {
    await expectVictimAhead(
      () => inSequence(20, () => send('flooders', 'flooder', 'long 15')),
      () => send('victims', 'victim', 'echo me first'),
    );
  });

  it("starts another owner's task of the same tenant before the queued part of one owner's flood", async () => {
    await expectVictimAhead(
      () => inSequence(20, () => send('shared', 'greedy', 'long 15')),
      () => send('shared', 'modest', 'echo me first'),
    );
  });

  it("starts a second tenant's task before the queued part of a flood from many owners of one tenant", async () => {
    // Twenty owners of one tenant with one task each: per owner they are all first in line.
    await expectVictimAhead(
      () => inSequence(20, (i) => send('crowd', `member-${i}`, 'long 15')),
      () => send('loner', 'victim', 'echo me first'),
    );
  });
});
