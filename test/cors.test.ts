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
