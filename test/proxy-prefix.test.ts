// The gateway behind a path-prefixing reverse proxy (a small Node http proxy this file starts,
// mounting the gateway under /gw/): partner signatures cover the URL the partner called, prefix
// included, whether the gateway learns it from publicUrl or from a trusted proxy's forwarded
// headers (off by default); bearer callers and the official client work through it; and an SSE
// stream through it arrives event by event, not buffered.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetTaskRequest, SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory, createAuthenticatingFetchWithRetry, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, createTestPartner, type TestIssuer, type TestPartner } from './support/identity.ts';
import { openSse } from './support/sse.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PREFIX = '/gw';

interface PrefixingProxy {
  port: number;
  /** The gateway's port, set once the gateway runs. */
  target: { port: number };
  close(): Promise<void>;
}

/**
 * A reverse proxy as deployments have them: strips /gw, forwards everything else, adds
 * X-Forwarded-Proto/-Host/-Prefix/-For, and streams both bodies through without buffering.
 */
async function startPrefixingProxy(): Promise<PrefixingProxy> {
  const target = { port: 0 };
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith(`${PREFIX}/`)) {
      res.writeHead(404).end();
      return;
    }
    const upstream = httpRequest(
      {
        host: '127.0.0.1',
        port: target.port,
        method: req.method,
        path: url.slice(PREFIX.length),
        headers: {
          ...req.headers,
          'x-forwarded-proto': 'http',
          'x-forwarded-host': req.headers.host ?? '',
          'x-forwarded-prefix': PREFIX,
          'x-forwarded-for': req.socket.remoteAddress ?? '',
        },
      },
      (upstreamResponse) => {
        res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
        res.flushHeaders();
        upstreamResponse.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    target,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let issuer: TestIssuer;
let partner: TestPartner;

beforeAll(async () => {
  issuer = await createTestIssuer();
  partner = createTestPartner('acme', ['a2a:read', 'a2a:write']);
});

const signedPost = async (url: string, body: string): Promise<{ status: number; body: Json }> => {
  const response = await fetch(url, { method: 'POST', headers: await partner.sign(url, body), body });
  return { status: response.status, body: (await response.json()) as Json };
};

const sendBody = (text: string) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: textMessage(text) } });

describe.each([
  ['publicUrl names the prefix', (proxyPort: number) => ({ publicUrl: `http://127.0.0.1:${proxyPort}${PREFIX}` })],
  ['a trusted proxy forwards it (X-Forwarded-*)', () => ({ trustProxy: ['loopback'] })],
])('behind a proxy mounting the gateway under /gw/: %s', (_name, settings) => {
  let proxy: PrefixingProxy;
  let gw: TestGateway;
  let base: string;

  beforeAll(async () => {
    proxy = await startPrefixingProxy();
    gw = await startTestGateway({
      name: 'proxy-prefix',
      adapterOptions: { stepMs: 150 },
      config: { auth: { enabled: true, issuers: [issuer.config], partners: [partner.config] }, ...settings(proxy.port) },
    });
    proxy.target.port = gw.gateway.port;
    base = `http://127.0.0.1:${proxy.port}${PREFIX}`;
  });

  afterAll(async () => {
    await gw?.close();
    await proxy?.close();
  });

  it('a partner-signed request to the prefixed URL passes, on both bindings', async () => {
    const jsonRpc = await signedPost(`${base}/a2a/jsonrpc`, sendBody('echo signed through the proxy'));
    expect(jsonRpc.status, JSON.stringify(jsonRpc.body)).toBe(200);
    expect(jsonRpc.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    const rest = await signedPost(`${base}/a2a/rest/message:send`, JSON.stringify({ message: textMessage('echo signed over rest') }));
    expect(rest.status, JSON.stringify(rest.body)).toBe(200);
    expect(rest.body.task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('a signature over the unprefixed URL (what the gateway itself sees) is refused', async () => {
    const url = `${base}/a2a/jsonrpc`;
    const body = sendBody('echo wrong target');
    const headers = await partner.sign(`http://127.0.0.1:${proxy.port}/a2a/jsonrpc`, body);
    const response = await fetch(url, { method: 'POST', headers, body });
    expect(response.status).toBe(401);
    expect(await response.text()).toContain('BAD_SIGNATURE');
  });

  it('bearer callers pass through it, the official client included (over both bindings)', async () => {
    const token = await issuer.token({ sub: 'proxied' });
    const plain = await rpc(`${base}/a2a/jsonrpc`, 'SendMessage', { message: textMessage('echo bearer') }, { Authorization: `Bearer ${token}` });
    expect(plain.status).toBe(200);
    const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
      headers: async () => ({ Authorization: `Bearer ${token}` }),
      shouldRetryWithHeaders: async () => undefined,
    });
    for (const transport of [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })]) {
      // The card is fetched through the proxy; the client then calls the interface it names.
      const client = await new ClientFactory({ transports: [transport] }).createFromUrl(`${base}/.well-known/agent-card.json`, '');
      const sent = (await client.sendMessage(SendMessageRequest.fromJSON({ message: textMessage('echo via the sdk') }))) as Json;
      const taskId = (sent.payload?.value?.id ?? sent.task?.id ?? sent.id) as string;
      expect(taskId, JSON.stringify(sent)).toBeTruthy();
      const read = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
      expect(read.id).toBe(taskId);
    }
  });

  it('an SSE stream through it is not buffered: events arrive one by one while the task runs', async () => {
    const token = await issuer.token({ sub: 'streamer' });
    const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` };
    const { response, reader } = await openSse(`${base}/a2a/rest/message:stream`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ message: textMessage('long 8') }),
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    // The first events are here while the task is still working: nothing waited for the end.
    const early = await reader.waitForEvents(3);
    const taskId = (JSON.parse(early[0]?.data ?? '{}') as Json).task.id as string;
    const during = (await (await fetch(`${gw.restUrl}/tasks/${taskId}`, { headers })).json()) as Json;
    expect(during.status.state).toBe('TASK_STATE_WORKING');
    await reader.done;
    const last = JSON.parse(reader.events.at(-1)?.data ?? '{}') as Json;
    expect(last.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    expect(reader.events.length).toBeGreaterThan(early.length);
  });
});

describe('forwarded headers are not believed by default', () => {
  let proxy: PrefixingProxy;
  let gw: TestGateway;

  beforeAll(async () => {
    proxy = await startPrefixingProxy();
    gw = await startTestGateway({ name: 'proxy-untrusted', config: { auth: { enabled: true, issuers: [issuer.config], partners: [partner.config] } } });
    proxy.target.port = gw.gateway.port;
  });

  afterAll(async () => {
    await gw?.close();
    await proxy?.close();
  });

  it('without trustProxy or a prefixed publicUrl, a request signed for the proxy URL is refused', async () => {
    const url = `http://127.0.0.1:${proxy.port}${PREFIX}/a2a/jsonrpc`;
    const body = sendBody('echo untrusted');
    const response = await fetch(url, { method: 'POST', headers: await partner.sign(url, body), body });
    expect(response.status).toBe(401);
    expect(await response.text()).toContain('BAD_SIGNATURE');
  });
});
