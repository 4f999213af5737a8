// Small pieces of the gRPC binding on their own: the peer address the unauthenticated limiter
// counts, where a stream event's id goes, and how a2aGateway metadata already there is kept.
import { describe, expect, it } from 'vitest';
import { agentOfTenant, peerAddressOf } from '../src/bindings/grpc/call-metadata.ts';
import { withEventId } from '../src/bindings/grpc/grpc-streams.ts';

describe('peerAddressOf', () => {
  it('strips the port (and the ipv4:/ipv6: scheme grpc-js may add) from IPv4 and IPv6 peers', () => {
    expect(peerAddressOf('127.0.0.1:50123')).toBe('127.0.0.1');
    expect(peerAddressOf('ipv4:10.0.0.7:443')).toBe('10.0.0.7');
    expect(peerAddressOf('[::1]:50123')).toBe('::1');
    expect(peerAddressOf('ipv6:[2001:db8::1]:8080')).toBe('2001:db8::1');
    expect(peerAddressOf('2001:db8::1')).toBe('2001:db8::1');
    expect(peerAddressOf('unix:/tmp/a.sock')).toBe('unix:/tmp/a.sock');
  });
});

describe('agentOfTenant', () => {
  it('reads agents/<name> only; any other tenant is a tenant', () => {
    expect(agentOfTenant('agents/helpdesk')).toBe('helpdesk');
    expect(agentOfTenant('acme')).toBeUndefined();
    expect(agentOfTenant('agents/a/b')).toBeUndefined();
    expect(agentOfTenant('agents/')).toBeUndefined();
    expect(agentOfTenant(undefined)).toBeUndefined();
  });
});

describe('withEventId', () => {
  it('sets metadata.a2aGateway.eventId on the one payload, keeping the metadata that was there', () => {
    const update = JSON.stringify({ statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' }, metadata: { cancellation: { stage: 'requested' }, a2aGateway: { other: 1 } } } });
    expect(withEventId(update, '17-0')).toEqual({
      statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' }, metadata: { cancellation: { stage: 'requested' }, a2aGateway: { other: 1, eventId: '17-0' } } },
    });
    expect(withEventId(JSON.stringify({ task: { id: 't' } }), '18-1')).toEqual({ task: { id: 't', metadata: { a2aGateway: { eventId: '18-1' } } } });
    expect(withEventId(JSON.stringify({ message: { messageId: 'm' } }), undefined)).toEqual({ message: { messageId: 'm' } });
  });
});
