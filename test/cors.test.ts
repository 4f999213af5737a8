// Browser-based A2A clients call the bindings cross-origin: preflights are answered and
// responses (including streams and errors) carry the CORS headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, textMessage, type TestGateway } from './support/harness.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ name: 'cors' });
});

afterAll(async () => {
  await gw?.close();
});

describe('CORS on the A2A bindings', () => {
  it('answers preflights for both bindings with the A2A request headers allowed', async () => {
    for (const [url, methods] of [
      [gw.jsonRpcUrl, 'POST'],
      [`${gw.restUrl}/message:send`, 'GET, POST, DELETE'],
    ] as const) {
      const response = await fetch(url, {
        method: 'OPTIONS',
        headers: { Origin: 'https://inspector.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type, a2a-version' },
      });
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('access-control-allow-methods')).toBe(methods);
      expect(response.headers.get('access-control-allow-headers')).toMatch(/A2A-Version/);
      expect(response.headers.get('access-control-allow-headers')).toMatch(/Last-Event-ID/);
    }
  });

  it('puts Access-Control-Allow-Origin on results, errors and streams', async () => {
    const result = await fetch(gw.jsonRpcUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Origin: 'https://inspector.example' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: textMessage('echo cors') } }),
    });
    expect(result.headers.get('access-control-allow-origin')).toBe('*');
    const error = await fetch(`${gw.restUrl}/tasks/nope`, { headers: { 'A2A-Version': '1.0' } });
    expect(error.status).toBe(404);
    expect(error.headers.get('access-control-allow-origin')).toBe('*');
    const stream = await fetch(`${gw.restUrl}/message:stream`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ message: textMessage('echo stream') }),
    });
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(stream.headers.get('access-control-allow-origin')).toBe('*');
    await stream.text();
  });
});

describe('CORS with an allow-list (corsOrigins)', () => {
  let listed: TestGateway;
  beforeAll(async () => {
    listed = await startTestGateway({ name: 'cors-list', config: { corsOrigins: ['https://console.example.com'] } });
  });
  afterAll(async () => {
    await listed?.close();
  });

  it('answers a listed origin with that origin, and gives an unlisted one no CORS headers', async () => {
    const preflight = (origin: string) =>
      fetch(listed.jsonRpcUrl, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' } });
    const allowed = await preflight('https://console.example.com');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://console.example.com');
    expect(allowed.headers.get('vary')).toMatch(/Origin/);
    const refused = await preflight('https://evil.example');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    expect(refused.headers.get('access-control-allow-methods')).toBeNull();
    const call = await fetch(`${listed.restUrl}/tasks/nope`, { headers: { 'A2A-Version': '1.0', Origin: 'https://evil.example' } });
    expect(call.headers.get('access-control-allow-origin')).toBeNull();
    // The card is a public document: readable from any origin.
    const card = await fetch(`${listed.url}/.well-known/agent-card.json`, { headers: { Origin: 'https://evil.example' } });
    expect(card.headers.get('access-control-allow-origin')).toBe('*');
  });
});
