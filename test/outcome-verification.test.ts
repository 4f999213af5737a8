// Invariant 8: a terminal state is not a verified outcome. A completed task whose adapter checks
// its results says whether its result was checked, how, and what was found
// (metadata.a2aGateway.outcome); a result nobody was asked to check carries no outcome at all.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject, Task } from '../src/protocol/types.ts';
import { ROOT, rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { fanoutMessage } from './support/coordination.ts';
import { VERIFICATION_EXTENSION_URI } from '../src/extensions/verification.ts';

let gw: TestGateway;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'a2a-outcome-'));
  gw = await startTestGateway({
    name: 'outcome',
    adapterOptions: { stepMs: 5, ledgerFile: join(dir, 'ledger.txt') },
    config: { delegation: { roles: { broken: { adapter: join(ROOT, 'test/fixtures/failing-adapter.mjs') } } } },
  });
});

afterAll(async () => {
  await gw?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function run(message: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Task> {
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', { message }, headers);
  expect(body.error).toBeUndefined();
  const { task } = body.result as { task: Task };
  // Read back as any client would, not from the send's answer alone.
  const { body: read } = await rpc(gw.jsonRpcUrl, 'GetTask', { id: task.id });
  return read.result as Task;
}

const outcomeOf = (task: Task): JsonObject | undefined => ((task.metadata?.a2aGateway ?? {}) as JsonObject).outcome as JsonObject | undefined;

describe('a completed task says whether its result was verified', () => {
  it('unchecked (echo): completed, and no "not verified" where no verification was asked', async () => {
    const task = await run(textMessage('echo hi'));
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(outcomeOf(task)).toBeUndefined();
    expect(JSON.stringify(task)).not.toContain('verified');
  });

  it('unchecked, but the caller asked (verification extension): explicitly not verified, and why', async () => {
    const task = await run(textMessage('echo hi'), { 'A2A-Extensions': VERIFICATION_EXTENSION_URI });
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(outcomeOf(task)).toEqual({ verified: false, method: 'none: the agent does not check its results' });
  });

  it('checked where it took effect (transfer): verified, with the ledger evidence', async () => {
    const task = await run(textMessage('transfer 3'));
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(outcomeOf(task)).toEqual({
      verified: true,
      method: 'each charge looked up in the ledger by its idempotency key',
      evidence: { charges: 3, inLedgerOnce: 3, missing: 0, duplicated: 0 },
    });
  });

  it('judged by a reviewer (fanout): verified when approved, not verified when rejected, the reviewer named either way', async () => {
    const approved = await run(fanoutMessage({ assignments: [{ text: 'echo a' }, { text: 'echo b' }] }) as unknown as Record<string, unknown>);
    expect(outcomeOf(approved)).toMatchObject({ verified: true, evidence: { verdict: expect.stringMatching(/^approve/), reviewerTaskId: expect.any(String) } });

    const rejected = await run(fanoutMessage({ assignments: [{ text: 'echo a' }, { role: 'broken', text: 'x' }] }) as unknown as Record<string, unknown>);
    // Completed (the policy is continue), yet the check failed: the task says so.
    expect(rejected.status.state).toBe('TASK_STATE_COMPLETED');
    expect(outcomeOf(rejected)).toMatchObject({ verified: false, evidence: { verdict: expect.stringMatching(/^reject/), reviewerTaskId: expect.any(String) } });
  });

  it('a task that did not complete claims no outcome', async () => {
    const task = await run(fanoutMessage({ assignments: [{ role: 'broken', text: 'x' }], onFailure: 'fail-fast', review: false }) as unknown as Record<string, unknown>);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(outcomeOf(task)).toBeUndefined();
  });
});
