// The per-request steps of src/bindings/http/, one by one: each is a small function of a
// request's headers (or body bytes) that either passes or throws the refusal the spec asks for.
// Their composition, against a live gateway over real HTTP, is in edge-pipeline.test.ts.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { presentedCredentials } from '../src/auth/credentials.ts';
import { checkContentType } from '../src/bindings/http/content-type.ts';
import { checkHeaderCount } from '../src/bindings/http/header-count.ts';
import { JsonComplexityScanner } from '../src/bindings/http/json-complexity.ts';
import { lastEventIdOf } from '../src/bindings/http/last-event-id.ts';
import { createProxyTrust } from '../src/bindings/http/proxy-trust.ts';
import { checkDeclaredLength } from '../src/bindings/http/request-body.ts';
import { A2AError } from '../src/protocol/errors.ts';

const LIMITS = { maxDepth: 8, maxObjectKeys: 16, maxArrayLength: 32, maxNodes: 100 };

function scan(text: string, limits = LIMITS, chunkSize = text.length): ReturnType<JsonComplexityScanner['push']> {
  const scanner = new JsonComplexityScanner(limits);
  const bytes = Buffer.from(text, 'utf8');
  for (let offset = 0; offset < bytes.length; offset += chunkSize) {
    const exceeded = scanner.push(bytes.subarray(offset, offset + chunkSize));
    if (exceeded !== undefined) return exceeded;
  }
  return undefined;
}

function refusal(run: () => unknown): A2AError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(A2AError);
    return error as A2AError;
  }
  throw new Error('expected a refusal');
}

/** Just enough of an IncomingMessage for the header-only steps. */
function requestWith(headers: Record<string, string | string[]>, remoteAddress = '127.0.0.1'): IncomingMessage {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  const rawHeaders = Object.entries(headers).flatMap(([name, value]) => (Array.isArray(value) ? value.flatMap((v) => [name, v]) : [name, value]));
  const joined = Object.fromEntries(Object.entries(lower).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value]));
  const distinct = Object.fromEntries(Object.entries(lower).map(([name, value]) => [name, Array.isArray(value) ? value : [value]]));
  return { headers: joined, headersDistinct: distinct, rawHeaders, socket: { remoteAddress } } as unknown as IncomingMessage;
}

describe('JSON complexity scanner', () => {
  it('accepts documents exactly at every bound', () => {
    expect(scan(`${'['.repeat(8)}${']'.repeat(8)}`)).toBeUndefined();
    expect(scan(JSON.stringify(Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, i]))))).toBeUndefined();
    expect(scan(JSON.stringify(Array.from({ length: 32 }, (_, i) => i)))).toBeUndefined();
    expect(scan('{"a":[],"b":{},"c":""}')).toBeUndefined();
  });

  it('refuses one past each bound', () => {
    expect(scan(`${'['.repeat(9)}${']'.repeat(9)}`)).toEqual({ bound: 'depth', limit: 8 });
    expect(scan(JSON.stringify(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i]))))).toEqual({ bound: 'objectKeys', limit: 16 });
    expect(scan(JSON.stringify(Array.from({ length: 33 }, (_, i) => i)))).toEqual({ bound: 'arrayLength', limit: 32 });
    const manySmall = JSON.stringify(Array.from({ length: 20 }, () => [1, 2, 3, 4, 5]));
    expect(scan(manySmall)).toEqual({ bound: 'nodes', limit: 100 });
  });

  it('does not count brackets, commas or escaped quotes inside strings', () => {
    const tricky = JSON.stringify({ text: `${'[{,'.repeat(500)} \\" ] } "` });
    expect(scan(tricky)).toBeUndefined();
    expect(JSON.parse(tricky)).toBeTruthy();
  });

  it('finds the same bound whatever the chunking, escapes split across chunks included', () => {
    const document = JSON.stringify({ a: 'x\\"[[[[[[[[[[', b: [[[[[[[[[1]]]]]]]]] });
    const whole = scan(document);
    expect(whole).toEqual({ bound: 'depth', limit: 8 });
    for (const size of [1, 2, 3, 7]) expect(scan(document, LIMITS, size)).toEqual(whole);
  });

  it('stays harmless on malformed input (JSON.parse judges it later)', () => {
    expect(scan(']]]]}}}},,,,')).toBeUndefined();
    expect(scan('{"a": [1, 2')).toBeUndefined();
  });
});

describe('declared body size', () => {
  it('refuses a Content-Length past maxBodyBytes with 413 before any byte is read', () => {
    const error = refusal(() => checkDeclaredLength(requestWith({ 'Content-Length': '2049' }), 2048));
    expect(error.httpStatus).toBe(413);
    expect(error.metadata.reason).toBe('BODY_TOO_LARGE');
    expect(() => checkDeclaredLength(requestWith({ 'Content-Length': '2048' }), 2048)).not.toThrow();
    expect(() => checkDeclaredLength(requestWith({ 'Transfer-Encoding': 'chunked' }), 2048)).not.toThrow();
  });
});

describe('content type', () => {
  const exchange = (contentType: string | undefined, hasBody: boolean) => ({ header: () => contentType, hasBody });

  it('JSON-RPC: anything but JSON is ContentTypeNotSupportedError (-32005) with HTTP 415', () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const error = refusal(() => checkContentType(exchange(type, true), 'json-required'));
      expect(error.kind).toBe('CONTENT_TYPE_NOT_SUPPORTED');
      expect(error.mapping.jsonRpcCode).toBe(-32005);
      expect(error.httpStatus).toBe(415);
    }
    for (const type of ['application/json', 'application/json; charset=utf-8', 'application/a2a+json']) {
      expect(() => checkContentType(exchange(type, true), 'json-required')).not.toThrow();
    }
  });

  it('HTTP+JSON: only a request with a body needs a JSON type', () => {
    expect(() => checkContentType(exchange(undefined, false), 'json-if-body')).not.toThrow();
    expect(refusal(() => checkContentType(exchange('text/plain', true), 'json-if-body')).httpStatus).toBe(415);
  });
});

describe('header count', () => {
  it('refuses more fields than maxHeaderCount with 431', () => {
    const headers = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-Filler-${i}`, 'x']));
    expect(refusal(() => checkHeaderCount(requestWith(headers), 20)).httpStatus).toBe(431);
    expect(() => checkHeaderCount(requestWith(headers), 21)).not.toThrow();
  });
});

describe('Last-Event-ID', () => {
  const exchange = (value: string | undefined) => ({ header: () => value });

  it('accepts stream ids up to 2^64 - 1 in both parts', () => {
    expect(lastEventIdOf(exchange(undefined))).toBeUndefined();
    expect(lastEventIdOf(exchange('1700000000000-0'))).toBe('1700000000000-0');
    expect(lastEventIdOf(exchange('18446744073709551615-18446744073709551615'))).toBe('18446744073709551615-18446744073709551615');
  });

  it('refuses anything else, a sequence of 2^64 included, as InvalidParams', () => {
    for (const value of ['1700000000000-18446744073709551616', '18446744073709551616-0', '1-2-3', 'abc', '1700000000000', '-1-0', '1'.repeat(30) + '-0']) {
      const error = refusal(() => lastEventIdOf(exchange(value)));
      expect(error.kind, value).toBe('INVALID_PARAMS');
      expect(error.violations[0]?.field).toBe('Last-Event-ID');
    }
  });
});

describe('presented credentials', () => {
  const request = (headers: Record<string, string | string[]>) => {
    const r = requestWith(headers);
    return { headerValues: (name: string) => r.headersDistinct[name] ?? [] };
  };

  it('reads none, one bearer token or one signature', () => {
    expect(presentedCredentials(request({}))).toEqual({ kind: 'none' });
    expect(presentedCredentials(request({ Authorization: 'Bearer abc' }))).toEqual({ kind: 'bearer', authorization: 'Bearer abc' });
    expect(presentedCredentials(request({ Signature: 'sig1=:AA==:', 'Signature-Input': 'sig1=()' }))).toEqual({ kind: 'signature' });
  });

  it('refuses two Authorization headers, or a token beside a signature, with 400 AMBIGUOUS_CREDENTIALS', () => {
    for (const headers of <Record<string, string | string[]>[]>[
      { Authorization: ['Bearer a', 'Bearer b'] },
      { Authorization: 'Bearer a', Signature: 'sig1=:AA==:' },
      { Authorization: 'Bearer a', 'Signature-Input': 'sig1=()' },
    ]) {
      const error = refusal(() => presentedCredentials(request(headers)));
      expect(error.kind).toBe('UNAUTHENTICATED');
      expect(error.httpStatus).toBe(400);
      expect(error.metadata.reason).toBe('AMBIGUOUS_CREDENTIALS');
      expect(error.extraHeaders['WWW-Authenticate']).toContain('error="invalid_request"');
    }
  });
});

describe('proxy trust', () => {
  const publicUrl = new URL('https://agents.example.com/gw');
  const forwardedHeaders = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'edge.example.com', 'X-Forwarded-Prefix': '/partners/', 'X-Forwarded-For': '203.0.113.7, 10.0.0.2' };

  it('off by default: forwarded headers are ignored, publicUrl (its path prefix included) is the base', () => {
    const trust = createProxyTrust(false);
    const request = requestWith(forwardedHeaders, '127.0.0.1');
    expect(trust.publicBase(request, publicUrl)).toBe('https://agents.example.com/gw');
    expect(trust.clientAddress(request)).toBe('127.0.0.1');
  });

  it('from a trusted proxy: scheme, host and prefix as forwarded, the client the first untrusted hop', () => {
    const trust = createProxyTrust(['loopback', '10.0.0.0/8']);
    const request = requestWith(forwardedHeaders, '::ffff:127.0.0.1');
    expect(trust.publicBase(request, publicUrl)).toBe('https://edge.example.com/partners');
    expect(trust.clientAddress(request)).toBe('203.0.113.7');
  });

  it('RFC 7239 Forwarded wins over X-Forwarded-*', () => {
    const trust = createProxyTrust(true);
    const request = requestWith({ ...forwardedHeaders, Forwarded: 'for="[2001:db8::7]:4711";proto=http;host=rfc.example.org, for=10.0.0.2' }, '10.0.0.3');
    expect(trust.publicBase(request, publicUrl)).toBe('http://rfc.example.org/partners');
    // Every hop is trusted (true): the client is the first one named.
    expect(trust.clientAddress(request)).toBe('2001:db8::7');
  });

  it('a peer that is not on the list is not believed', () => {
    const trust = createProxyTrust(['10.0.0.0/8']);
    const request = requestWith(forwardedHeaders, '192.0.2.1');
    expect(trust.trustsPeer(request)).toBe(false);
    expect(trust.publicBase(request, publicUrl)).toBe('https://agents.example.com/gw');
    expect(trust.clientAddress(request)).toBe('192.0.2.1');
  });

  it('ignores forwarded values that are not a scheme, host or path', () => {
    const trust = createProxyTrust(true);
    const request = requestWith({ 'X-Forwarded-Proto': 'javascript', 'X-Forwarded-Host': 'evil.example/path', 'X-Forwarded-Prefix': 'no-slash' }, '127.0.0.1');
    expect(trust.publicBase(request, publicUrl)).toBe('https://agents.example.com/gw');
  });
});
