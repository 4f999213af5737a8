// The MCP face's pure parts: task ids and cursors, the 401 challenge with the resource
// metadata, how an A2A task reads as an MCP task and a tool result, and the metrics' bounded labels.
import { describe, expect, it } from 'vitest';
import { A2AError } from '../src/protocol/errors.ts';
import type { Task } from '../src/protocol/types.ts';
import { decodeCursor, encodeCursor, mcpTaskIdOf, parseMcpTaskId } from '../src/mcp/task-ids.ts';
import { protectedResourceOf, withResourceMetadata } from '../src/mcp/protected-resource.ts';
import { mcpStatusOf, mcpTaskOf, toolResultOfTask } from '../src/mcp/task-results.ts';
import { parseToolArguments } from '../src/mcp/agent-tools.ts';
import { toolCallOutcome } from '../src/mcp/call-outcomes.ts';
import { methodLabelOf } from '../src/mcp/mcp-methods.ts';

const task = (state: Task['status']['state'], extra: Partial<Task> = {}): Task => ({
  id: '01JD0000000000000000000000',
  contextId: 'ctx-1',
  status: { state, timestamp: '2026-12-04T18:00:00.000Z', message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'said so' }] } },
  ...extra,
});

describe('task ids and cursors', () => {
  it('splits an MCP task id at the first colon (agent names hold none) and refuses other shapes', () => {
    expect(parseMcpTaskId(mcpTaskIdOf('demo.v2', 'a:b'))).toEqual({ agent: 'demo.v2', taskId: 'a:b' });
    for (const bad of ['', 'demo', ':task', 'demo:', `demo:${'x'.repeat(600)}`]) expect(() => parseMcpTaskId(bad), bad).toThrow(/not a task id/);
  });

  it('gives back the cursors it made and refuses forged ones', () => {
    expect(decodeCursor(encodeCursor({ agent: 'demo', page: 'p1' }))).toEqual({ agent: 'demo', page: 'p1' });
    expect(decodeCursor(undefined)).toBeUndefined();
    for (const bad of ['forged', Buffer.from('{"agent":1}').toString('base64url'), Buffer.from('{"agent":"a","more":1}').toString('base64url'), 'x'.repeat(3000)]) {
      expect(() => decodeCursor(bad), bad).toThrow(/cursor/);
    }
  });
});

describe('the 401 challenge', () => {
  const resource = protectedResourceOf('https://gw.example/base/', ['https://issuer.example'], ['agent:x', 'agent:x']);

  it('names the resource and its metadata under the public URL, and every scope once', () => {
    expect(resource.resource).toBe('https://gw.example/base/mcp');
    expect(resource.metadataUrl).toBe('https://gw.example/base/.well-known/oauth-protected-resource/mcp');
    expect(resource.scopes).toEqual(['a2a:read', 'a2a:write', 'agent:x']);
  });

  it('adds resource_metadata to the Bearer challenge of a 401, and leaves other errors alone', () => {
    const metadata = 'resource_metadata="https://gw.example/base/.well-known/oauth-protected-resource/mcp"';
    const refused = (header: string | undefined): string => {
      const error = new A2AError('UNAUTHENTICATED', 'no', header === undefined ? {} : { headers: { 'WWW-Authenticate': header } });
      return (withResourceMetadata(error, resource) as A2AError).extraHeaders['WWW-Authenticate'] as string;
    };
    expect(refused('Bearer realm="a2a-gateway"')).toBe(`Bearer realm="a2a-gateway", ${metadata}`);
    expect(refused('Bearer realm="a2a-gateway", error="invalid_token"')).toBe(`Bearer realm="a2a-gateway", ${metadata}, error="invalid_token"`);
    expect(refused('Signature realm="x", Bearer realm="a2a-gateway"')).toBe(`Signature realm="x", Bearer realm="a2a-gateway", ${metadata}`);
    expect(refused('Signature realm="x"')).toBe(`Bearer ${metadata}, Signature realm="x"`);
    expect(refused(undefined)).toBe(`Bearer ${metadata}`);
    const other = new A2AError('PERMISSION_DENIED', 'no');
    expect(withResourceMetadata(other, resource)).toBe(other);
  });
});

describe('an A2A task as MCP sees it', () => {
  it('maps every state: interrupted tasks have answered the call', () => {
    expect(mcpStatusOf('TASK_STATE_SUBMITTED')).toBe('working');
    expect(mcpStatusOf('TASK_STATE_WORKING')).toBe('working');
    expect(mcpStatusOf('TASK_STATE_COMPLETED')).toBe('completed');
    expect(mcpStatusOf('TASK_STATE_INPUT_REQUIRED')).toBe('completed');
    expect(mcpStatusOf('TASK_STATE_AUTH_REQUIRED')).toBe('completed');
    expect(mcpStatusOf('TASK_STATE_FAILED')).toBe('failed');
    expect(mcpStatusOf('TASK_STATE_REJECTED')).toBe('failed');
    expect(mcpStatusOf('TASK_STATE_CANCELED')).toBe('cancelled');
  });

  it('reads the creation time from the ULID and the update time from the status', () => {
    const mcp = mcpTaskOf('demo', task('TASK_STATE_WORKING'), { ttlMs: 5000, pollIntervalMs: 700 });
    expect(mcp).toMatchObject({ taskId: 'demo:01JD0000000000000000000000', status: 'working', ttl: 5000, pollInterval: 700, lastUpdatedAt: '2026-12-04T18:00:00.000Z', statusMessage: 'TASK_STATE_WORKING: said so' });
    expect(Date.parse(mcp.createdAt)).toBeLessThan(Date.parse('2026-12-04T18:00:00.000Z'));
    expect(mcpTaskOf('demo', task('TASK_STATE_WORKING', { id: 'not-a-ulid' }), { ttlMs: 1, pollIntervalMs: 1 }).createdAt).toBe('2026-12-04T18:00:00.000Z');
  });

  it('turns artifacts into MCP content by part kind, and says why a task did not complete', () => {
    const done = toolResultOfTask(
      'demo',
      task('TASK_STATE_COMPLETED', {
        artifacts: [
          {
            artifactId: 'a',
            parts: [{ text: 'hi' }, { data: { n: 1 } }, { url: 'https://x.example/f.pdf', filename: 'f.pdf', mediaType: 'application/pdf' }, { raw: 'AAAA', mediaType: 'image/png' }, { raw: 'BBBB', filename: 'x.bin' }],
          },
        ],
      }),
    );
    expect(done.isError).toBe(false);
    expect(done.content.map((block) => block.type)).toEqual(['text', 'text', 'resource_link', 'image', 'resource']);
    expect(done.content[1]).toEqual({ type: 'text', text: '{"n":1}' });
    expect(done.structuredContent).toEqual({ taskId: '01JD0000000000000000000000', contextId: 'ctx-1', state: 'TASK_STATE_COMPLETED', mcpTaskId: 'demo:01JD0000000000000000000000' });

    const failed = toolResultOfTask('demo', task('TASK_STATE_FAILED'));
    expect(failed.isError).toBe(true);
    expect(failed.content).toEqual([{ type: 'text', text: 'The task 01JD0000000000000000000000 ended TASK_STATE_FAILED: said so' }]);

    const asks = toolResultOfTask('demo', task('TASK_STATE_INPUT_REQUIRED'));
    expect(asks.isError).toBe(false);
    expect(asks.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('taskId "01JD0000000000000000000000"') });
  });

  it('takes { message, contextId?, taskId? } and nothing else', () => {
    expect(parseToolArguments({ message: 'hi', contextId: 'c' })).toEqual({ message: 'hi', contextId: 'c' });
    expect(() => parseToolArguments({ message: '' })).toThrow(/message/);
    expect(() => parseToolArguments({ message: 'hi', extra: 1 })).toThrow(/Invalid arguments/);
    expect(() => parseToolArguments(undefined)).toThrow(/message/);
    expect(() => parseToolArguments({ message: 'hi', taskId: 'x'.repeat(300) })).toThrow(/taskId/);
  });
});

describe('metric labels', () => {
  it('names the MCP methods of the protocol, and anything else as one label', () => {
    expect(methodLabelOf('tools/call')).toBe('mcp tools/call');
    expect(methodLabelOf('notifications/cancelled')).toBe('mcp notifications/cancelled');
    for (const other of ['tools/call2', 'x'.repeat(500), '__proto__']) expect(methodLabelOf(other)).toBe('mcp other');
    for (const none of [undefined, 42, null]) expect(methodLabelOf(none)).toBe('mcp');
  });

  it('counts a tool call by the state it answered with, or what happened instead', () => {
    const answered = (state: unknown) => ({ content: [], structuredContent: { state } });
    expect(toolCallOutcome(toolResultOfTask('demo', task('TASK_STATE_COMPLETED')), false)).toBe('completed');
    expect(toolCallOutcome(answered('TASK_STATE_INPUT_REQUIRED'), false)).toBe('input_required');
    expect(toolCallOutcome(answered('TASK_STATE_CANCELED'), false)).toBe('canceled');
    expect(toolCallOutcome(answered('made up'), false)).toBe('other');
    expect(toolCallOutcome({ content: [], structuredContent: { contextId: null } }, false)).toBe('message');
    expect(toolCallOutcome({ task: mcpTaskOf('demo', task('TASK_STATE_SUBMITTED'), { ttlMs: 1, pollIntervalMs: 1 }) }, false)).toBe('task');
    expect(toolCallOutcome(undefined, false)).toBe('refused');
    expect(toolCallOutcome(undefined, true)).toBe('abandoned');
  });
});
