// The surface a canonical path is for: the one decision every step of the request pipeline
// (gateway/app.ts) reads, for the root agent's URL space and each /agents/<name>/….
import { describe, expect, it } from 'vitest';
import type { AgentEndpoint } from '../src/agents/agent-endpoint.ts';
import { agentOf, surfaceOf } from '../src/gateway/surface.ts';

const endpoint = (name: string, basePath: string): AgentEndpoint => ({ agent: { name }, basePath }) as unknown as AgentEndpoint;
const root = endpoint('main', '');
const helper = endpoint('helper agent', '/agents/helper%20agent');
const agents = { root, endpoints: new Map([['main', root], ['helper agent', helper]]) };

describe('surfaceOf', () => {
  it('finds the bindings and the card of the root agent and of a named one', () => {
    expect(surfaceOf('/a2a/jsonrpc', agents)).toEqual({ kind: 'jsonrpc', endpoint: root });
    expect(surfaceOf('/a2a/jsonrpc/', agents)).toEqual({ kind: 'jsonrpc', endpoint: root });
    expect(surfaceOf('/a2a/rest', agents)).toEqual({ kind: 'http+json', endpoint: root });
    expect(surfaceOf('/a2a/rest/tasks/t1', agents)).toEqual({ kind: 'http+json', endpoint: root });
    expect(surfaceOf('/.well-known/agent-card.json', agents)).toEqual({ kind: 'card', endpoint: root });
    expect(surfaceOf('/agents/helper%20agent/a2a/jsonrpc', agents)).toEqual({ kind: 'jsonrpc', endpoint: helper });
    expect(surfaceOf('/agents/helper%20agent/a2a/rest/message:send', agents)).toEqual({ kind: 'http+json', endpoint: helper });
    expect(surfaceOf('/agents/helper%20agent/.well-known/agent-card.json', agents)).toEqual({ kind: 'card', endpoint: helper });
  });

  it('tells the agent list, unknown agents, unserved agent paths and root routes apart', () => {
    expect(surfaceOf('/agents', agents)).toEqual({ kind: 'agent-list' });
    expect(surfaceOf('/agents/', agents)).toEqual({ kind: 'agent-list' });
    expect(surfaceOf('/agents/nobody/a2a/jsonrpc', agents)).toEqual({ kind: 'unknown-agent', name: 'nobody' });
    expect(surfaceOf('/agents/%E0%A4/a2a/jsonrpc', agents)).toEqual({ kind: 'unknown-agent', name: '%E0%A4' });
    expect(surfaceOf('/agents/helper%20agent/metrics', agents)).toEqual({ kind: 'agent-path', endpoint: helper });
    expect(surfaceOf('/agents/helper%20agent', agents)).toEqual({ kind: 'agent-path', endpoint: helper });
    expect(surfaceOf('/a2a/restless', agents)).toEqual({ kind: 'root', endpoint: root });
    expect(surfaceOf('/metrics', agents)).toEqual({ kind: 'root', endpoint: root });
  });

  it('names the agent of the URL space in the access log', () => {
    expect(agentOf(surfaceOf('/healthz', agents), '/healthz', agents)).toBe('main');
    expect(agentOf(surfaceOf('/agents', agents), '/agents', agents)).toBe('main');
    expect(agentOf(surfaceOf('/agents/', agents), '/agents/', agents)).toBeUndefined();
    expect(agentOf(surfaceOf('/agents/nobody/x', agents), '/agents/nobody/x', agents)).toBeUndefined();
    expect(agentOf(surfaceOf('/agents/helper%20agent/a2a/jsonrpc', agents), '/agents/helper%20agent/a2a/jsonrpc', agents)).toBe('helper agent');
  });
});
