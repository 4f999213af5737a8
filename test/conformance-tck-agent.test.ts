// tools/conformance/tck-agent.mjs, the agent docs/conformance.md puts behind the gateway for an
// official TCK run: each messageId prefix of the TCK's scenarios produces what the scenario says,
// within the adapter contract (a contract violation would fail the turn and so the TCK test).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runTestTurn } from '../adapters/testing/index.ts';
import type { Adapter, AdapterFactory } from '../adapters/types.ts';
import { DEFAULT_ADAPTER_ENVIRONMENT } from '../adapters/bounded-response.ts';
import type { Message } from '../src/protocol/types.ts';
import { ROOT } from './support/harness.ts';

const { createAdapter } = (await import(join(ROOT, 'tools', 'conformance', 'tck-agent.mjs'))) as { createAdapter: AdapterFactory };
const agent: Adapter = await createAdapter({ holdMs: 20 }, DEFAULT_ADAPTER_ENVIRONMENT);

function message(messageId: string): Message {
  return { messageId, role: 'ROLE_USER', parts: [{ text: 'from the TCK' }] };
}

async function turn(messageId: string) {
  const result = await runTestTurn(agent, { input: message(messageId) });
  expect(result.context.contractViolation).toBeUndefined();
  return result;
}

describe('the TCK agent', () => {
  it('completes a tck-complete-task message with the scenario text', async () => {
    const { outcome } = await turn('tck-complete-task-abc-jsonrpc');
    expect(outcome).toEqual({ state: 'completed', message: 'Hello from TCK' });
  });

  it('answers tck-message-response with a direct message', async () => {
    expect(agent.directMessages).toBe(true);
    const { outcome } = await turn('tck-message-response-abc');
    expect(outcome).toEqual({ state: 'message', message: 'Direct message response' });
  });

  it('stops at input-required and rejects on the matching prefixes', async () => {
    expect((await turn('tck-input-required-abc')).outcome.state).toBe('input-required');
    expect((await turn('tck-reject-task-abc')).outcome.state).toBe('rejected');
  });

  it('tells the file-url artifact from the file artifact (longest prefix first)', async () => {
    const url = await turn('tck-artifact-file-url-abc');
    expect(url.context.artifacts[0]?.parts[0]).toEqual({ url: 'https://example.com/output.txt', filename: 'output.txt', mediaType: 'text/plain' });
    const file = await turn('tck-artifact-file-abc');
    expect(file.context.artifacts[0]?.parts[0]).toEqual({ raw: 'dGNr', filename: 'output.txt', mediaType: 'text/plain' });
  });

  it('gives the data artifact the scenario object', async () => {
    const { context } = await turn('tck-artifact-data-abc');
    expect(context.artifacts[0]?.parts[0]).toMatchObject({ data: { key: 'value', count: 42 } });
  });

  it('streams working, the artifact, then completes', async () => {
    const { outcome, context } = await turn('tck-stream-001-abc');
    expect(context.statuses).toHaveLength(1);
    expect(context.artifacts[0]?.parts[0]).toEqual({ text: 'Stream hello from TCK' });
    expect(outcome.state).toBe('completed');
  });

  it('streams a chunked artifact as one artifact of two appended chunks', async () => {
    const { context } = await turn('tck-stream-artifact-chunked-abc');
    expect(context.chunks.map((chunk) => [chunk.append ?? false, chunk.lastChunk ?? false])).toEqual([[false, false], [true, true]]);
    expect(context.artifacts[0]?.parts).toEqual([{ text: 'chunk-1 ' }, { text: 'chunk-2' }]);
  });

  it('keeps a resubscribe task working for holdMs, and ends early when canceled', async () => {
    const { outcome, context } = await turn('test-resubscribe-message-id-abc');
    expect(context.statuses).toHaveLength(1);
    expect(outcome.state).toBe('completed');
    const slow = await createAdapter({ holdMs: 60_000 }, DEFAULT_ADAPTER_ENVIRONMENT);
    await expect(runTestTurn(slow, { input: message('test-resubscribe-message-id-x'), signal: AbortSignal.timeout(10) })).rejects.toThrow(/canceled/);
  });

  it('completes any other message', async () => {
    expect((await turn('something-else')).outcome.state).toBe('completed');
  });
});
