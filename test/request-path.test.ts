// The canonical path of a request target (src/gateway/request-path.ts): RFC 3986 normal form,
// or a refusal when the target has no single safe reading. test/admin-paths.test.ts sends these
// over the wire; this file pins the form itself.
import { describe, expect, it } from 'vitest';
import { canonicalTarget, targetOf } from '../src/gateway/request-path.ts';

const HOST = 'gw.example:8080';
const canonical = (target: string): string => {
  const result = canonicalTarget(target, HOST);
  if ('refused' in result) throw new Error(`${target} refused: ${result.refused}`);
  return targetOf(result);
};
const refusal = (target: string): string => {
  const result = canonicalTarget(target, HOST);
  if (!('refused' in result)) throw new Error(`${target} was read as ${targetOf(result)}`);
  return result.refused;
};

describe('the canonical target', () => {
  it('decodes escapes of unreserved characters and upper-cases the others', () => {
    expect(canonical('/admin/%71ueues')).toBe('/admin/queues');
    expect(canonical('/%61%64%6D%69%6E/%7e%2D%2e%5f')).toBe('/admin/~-._');
    expect(canonical('/agents/caf%c3%a9/x%3ay%40')).toBe('/agents/caf%C3%A9/x%3Ay%40');
    // An escaped "%" stays one: double encoding is not decoded twice.
    expect(canonical('/admin/%2571ueues')).toBe('/admin/%2571ueues');
  });

  it('removes dot segments, escaped ones too, never above the root', () => {
    expect(canonical('/./admin/queues')).toBe('/admin/queues');
    expect(canonical('/x/../admin/queues')).toBe('/admin/queues');
    expect(canonical('/admin/x/%2E%2E/queues')).toBe('/admin/queues');
    expect(canonical('/admin/x/.%2e/queues/%2e')).toBe('/admin/queues/');
    expect(canonical('/../../admin')).toBe('/admin');
    expect(canonical('/a/b/../..')).toBe('/');
    expect(canonical('/a/..b/c.')).toBe('/a/..b/c.');
  });

  it('collapses repeated slashes and keeps a trailing one', () => {
    expect(canonical('//admin//queues///api')).toBe('/admin/queues/api');
    expect(canonical('/admin/queues/')).toBe('/admin/queues/');
    expect(canonical('/')).toBe('/');
    expect(canonical('//')).toBe('/');
  });

  it('keeps case, matrix parameters and the query as they are', () => {
    expect(canonical('/ADMIN/Queues')).toBe('/ADMIN/Queues');
    expect(canonical('/admin;x=1/queues;a=b')).toBe('/admin;x=1/queues;a=b');
    expect(canonical('/a2a/rest/tasks?contextId=%2F..%2Fx&pageSize=2')).toBe('/a2a/rest/tasks?contextId=%2F..%2Fx&pageSize=2');
    expect(canonical('/x/../a2a/jsonrpc?')).toBe('/a2a/jsonrpc');
  });

  it('reads an absolute-form target addressed to the request\'s own host as its path', () => {
    expect(canonical(`http://${HOST}/admin/./queues?x=1`)).toBe('/admin/queues?x=1');
    expect(canonical(`HTTPS://${HOST.toUpperCase()}`)).toBe('/');
    expect(canonical(`http://${HOST}?a=b`)).toBe('/?a=b');
  });

  it('refuses what has no single safe reading, saying what', () => {
    expect(refusal('/admin%2Fqueues')).toMatch(/encoded slash/);
    expect(refusal('/admin%2fqueues')).toMatch(/encoded slash/);
    expect(refusal('/admin%5Cqueues')).toMatch(/encoded backslash/);
    expect(refusal('/admin\\queues')).toMatch(/backslash/);
    expect(refusal('/admin/queues%00')).toMatch(/NUL/);
    expect(refusal('/admin/%zzqueues')).toMatch(/invalid percent-escape "%zz"/);
    expect(refusal('/admin/queues%4')).toMatch(/invalid percent-escape/);
    expect(refusal('/admin/queues#x')).toMatch(/"#"/);
    expect(refusal('/admin/que ues')).toMatch(/" "/);
    expect(refusal('/admin/quéues')).toMatch(/"é"/);
    expect(refusal('/a?b=c#d')).toMatch(/query/);
    expect(refusal('/a?b=\\')).toMatch(/query/);
    expect(refusal('http://other/admin/queues')).toMatch(/another host/);
    expect(refusal(`http://user@${HOST}/admin/queues`)).toMatch(/another host/);
    expect(refusal('*')).toMatch(/neither a path/);
    expect(refusal('admin/queues')).toMatch(/neither a path/);
    expect('refused' in canonicalTarget(`http://${HOST}/admin`, undefined)).toBe(true);
  });

  it('reads a target of dot segments as long as Node\'s header bound lets through', () => {
    expect(canonical(`/${'a/../'.repeat(2_700)}admin`)).toBe('/admin');
    expect(canonical(`/${'../'.repeat(4_000)}admin`)).toBe('/admin');
  });
});
