// One owner's backlog does not starve another owner: a turn waits behind fewer turns the fewer
// tasks its owner has queued or running (its queue priority), so a caller with one task goes
// ahead of the queued part of another caller's flood.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';

let gw: TestGateway;

beforeAll(async () => {
  // Two turns at a time, so a flood of twenty queues up.
  gw = await startTestGateway({ name: 'fairness', config: { workerConcurrency: 2 }, adapterOptions: { stepMs: 20 } });
});

afterAll(async () => {
  await gw?.close();
});

async function send(tenant: string, text: string): Promise<string> {
  const reply = await rpc(gw.jsonRpcUrl, 'SendMessage', { tenant, message: textMessage(text), configuration: { returnImmediately: true } });
  return (reply.body.result as { task: { id: string } }).task.id;
}

async function startedAt(taskId: string): Promise<number | undefined> {
  const record = await gw.redis.hget(`${gw.prefix}:{${taskId}}:turns`, '1');
  return record === null ? undefined : (JSON.parse(record) as { startedAtMs?: number }).startedAtMs;
}

describe('fair share of the workers between owners', () => {
  it("starts a second owner's task before the queued part of the first owner's flood", async () => {
    const flood: string[] = [];
    for (let i = 0; i < 20; i++) flood.push(await send('flooder', 'long 15'));
    const sentAt = Date.now();
    const victim = await send('victim', 'echo me first');
    const victimStart = await waitFor(() => startedAt(victim), 60_000, "the victim's turn to start");
    expect(victimStart).toBeGreaterThanOrEqual(sentAt - 5);
    // The flood's turns that started between the victim's arrival and its start: at most the
    // slots that freed up in the meantime, never the queued rest of the flood.
    const starts = await Promise.all(flood.map(startedAt));
    const overtaking = starts.filter((s) => s !== undefined && s > sentAt && s < victimStart);
    expect(overtaking.length).toBeLessThanOrEqual(2);
    expect(starts.filter((s) => s === undefined || s > victimStart).length).toBeGreaterThanOrEqual(10);
  });
});
