// A webhook receiver for tests and the chaos suite: records every delivery with its headers,
// verifies Standard Webhooks signatures (v1a with the gateway's public key from its JWKS, v1
// with an HMAC secret, through the `standardwebhooks` library) and can be told to misbehave:
// answer a status (500, 429 with Retry-After, 410, …) for the next n requests or for good, answer
// slowly, reset connections, or go down altogether (port closed) and come back on the same port.
//
// In-process: `const receiver = await startWebhookReceiver({ jwksUrl })`.
// Another process: `node --import tsx test/support/webhook-receiver.ts --port 8092 [--jwks-url URL] [--hmac-secret whsec_…]`,
// then `GET /_receiver/deliveries` (JSON), `POST /_receiver/behaviour` with
// `{"status":500,"times":3,"retryAfterSeconds":1,"delayMs":0,"reset":false}`, `POST /_receiver/reset`,
// `POST /_receiver/down` with `{"forMs":5000}` (the port is closed that long, deliveries kept).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { JWK } from 'jose';
import { Webhook } from 'standardwebhooks';
import { verifyEd25519Signature } from '../../src/push/webhook-signature.ts';

export interface ReceivedDelivery {
  /** Order of arrival, from 1. */
  seq: number;
  atMs: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The parsed StreamResponse (undefined when the body is not JSON). */
  json: Record<string, unknown> | undefined;
  webhookId: string;
  /** v1a checked against the gateway's key: true/false, undefined when no key is known. */
  ed25519Valid: boolean | undefined;
  /** v1 checked with the configured HMAC secret: true/false, undefined when none is configured. */
  hmacValid: boolean | undefined;
  /** The status this receiver answered. */
  answered: number | 'reset';
}

export interface ReceiverBehaviour {
  /** Status to answer (default 200). */
  status?: number;
  /** For how many requests (undefined = until changed). */
  times?: number;
  retryAfterSeconds?: number;
  /** Wait this long before answering (a slow receiver; longer than the gateway's timeout = a timeout). */
  delayMs?: number;
  /** Destroy the connection instead of answering (a receiver crashing mid-request). */
  reset?: boolean;
  /** Only requests whose path starts with this. */
  pathPrefix?: string;
}

export interface WebhookReceiver {
  /** Base URL, e.g. http://127.0.0.1:PORT; webhooks go to any path below it. */
  url: string;
  port: number;
  deliveries: ReceivedDelivery[];
  /** Deliveries that were answered 2xx (what the receiver accepted). */
  accepted(pathPrefix?: string): ReceivedDelivery[];
  behave(behaviour: ReceiverBehaviour): void;
  /** Back to answering 200 at once. */
  reset(): void;
  /** Closes the port (connections are refused) until up(). */
  down(): Promise<void>;
  up(): Promise<void>;
  waitForAccepted(count: number, pathPrefix?: string, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

export interface WebhookReceiverOptions {
  port?: number;
  host?: string;
  /** The gateway's /.well-known/jwks.json: v1a signatures are verified with its OKP keys. */
  jwksUrl?: string;
  /** Or the keys themselves. */
  publicKeys?: JWK[];
  /** A Standard Webhooks secret (whsec_…) for v1 signatures. */
  hmacSecret?: string;
  /**
   * Misbehaviour chosen per request (a flaky receiver, e.g. the chaos suite's): asked for every
   * webhook request no behave() setting applies to; undefined answers 200 at once.
   */
  decide?: (path: string) => ReceiverBehaviour | undefined;
}

const lower = (headers: IncomingMessage['headers']): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value.join(', ') : (value ?? '')]));

export async function startWebhookReceiver(options: WebhookReceiverOptions = {}): Promise<WebhookReceiver> {
  const host = options.host ?? '127.0.0.1';
  const deliveries: ReceivedDelivery[] = [];
  let behaviour: ReceiverBehaviour = {};
  let keys: JWK[] | undefined = options.publicKeys;
  const hmac = options.hmacSecret === undefined ? undefined : new Webhook(options.hmacSecret);
  const sockets = new Set<Socket>();

  const loadKeys = async (): Promise<JWK[] | undefined> => {
    if (keys === undefined && options.jwksUrl !== undefined) {
      const response = await fetch(options.jwksUrl);
      keys = ((await response.json()) as { keys: JWK[] }).keys.filter((key) => key.kty === 'OKP' && key.crv === 'Ed25519');
    }
    return keys;
  };

  const verify = async (headers: Record<string, string>, body: string): Promise<Pick<ReceivedDelivery, 'ed25519Valid' | 'hmacValid'>> => {
    const signed = { id: headers['webhook-id'] ?? '', timestamp: headers['webhook-timestamp'] ?? '', signature: headers['webhook-signature'] ?? '' };
    const known = await loadKeys();
    const ed25519Valid = known === undefined ? undefined : known.some((key) => verifyEd25519Signature(key, signed, body));
    let hmacValid: boolean | undefined;
    if (hmac !== undefined) {
      try {
        hmac.verify(body, { 'webhook-id': signed.id, 'webhook-timestamp': signed.timestamp, 'webhook-signature': signed.signature });
        hmacValid = true;
      } catch {
        hmacValid = false;
      }
    }
    return { ed25519Valid, hmacValid };
  };

  const control = async (request: IncomingMessage, response: ServerResponse, body: string): Promise<void> => {
    const send = (status: number, value: unknown): void => {
      response.writeHead(status, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify(value));
    };
    if (request.url === '/_receiver/deliveries') return send(200, deliveries);
    if (request.url === '/_receiver/behaviour' && request.method === 'POST') {
      behaviour = JSON.parse(body || '{}') as ReceiverBehaviour;
      return send(200, behaviour);
    }
    if (request.url === '/_receiver/down' && request.method === 'POST') {
      const forMs = Number((JSON.parse(body || '{}') as { forMs?: number }).forMs ?? 5_000);
      send(200, { downForMs: forMs });
      response.once('finish', () => {
        void stop().then(() => setTimeout(() => void listen(port).catch(() => undefined), forMs));
      });
      return;
    }
    if (request.url === '/_receiver/reset' && request.method === 'POST') {
      behaviour = {};
      deliveries.length = 0;
      return send(200, {});
    }
    send(404, { error: 'unknown control path' });
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = request.url ?? '/';
    if (path.startsWith('/_receiver/')) return control(request, response, body);
    const applies = behaviour.pathPrefix === undefined || path.startsWith(behaviour.pathPrefix);
    const set = Object.keys(behaviour).some((key) => key !== 'pathPrefix');
    const current = applies && set ? behaviour : (options.decide?.(path) ?? {});
    if (applies && behaviour.times !== undefined) {
      behaviour = behaviour.times <= 1 ? {} : { ...behaviour, times: behaviour.times - 1 };
    }
    const headers = lower(request.headers);
    let json: Record<string, unknown> | undefined;
    try {
      json = JSON.parse(body) as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    const record: ReceivedDelivery = {
      seq: deliveries.length + 1,
      atMs: Date.now(),
      path,
      headers,
      body,
      json,
      webhookId: headers['webhook-id'] ?? '',
      ...(await verify(headers, body)),
      answered: current.reset === true ? 'reset' : (current.status ?? 200),
    };
    deliveries.push(record);
    if (current.delayMs !== undefined && current.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, current.delayMs));
    if (current.reset === true) {
      request.socket.destroy();
      return;
    }
    const extra: Record<string, string> = current.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(current.retryAfterSeconds) };
    if (!response.destroyed) {
      response.writeHead(current.status ?? 200, extra);
      response.end();
    }
  };

  let server: Server | undefined;
  let port = 0;
  const listen = async (port: number): Promise<number> => {
    const created = createServer((request, response) => {
      handle(request, response).catch(() => {
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
    });
    created.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    server = created;
    return new Promise<number>((resolve, reject) => {
      created.once('error', reject);
      created.listen(port, host, () => resolve((created.address() as AddressInfo).port));
    });
  };
  const stop = async (): Promise<void> => {
    const current = server;
    server = undefined;
    if (current === undefined) return;
    const closed = new Promise<void>((resolve) => current.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  port = await listen(options.port ?? 0);
  const accepted = (pathPrefix?: string): ReceivedDelivery[] =>
    deliveries.filter((d) => typeof d.answered === 'number' && d.answered >= 200 && d.answered < 300 && (pathPrefix === undefined || d.path.startsWith(pathPrefix)));
  return {
    url: `http://${host}:${port}`,
    port,
    deliveries,
    accepted,
    behave: (next) => {
      behaviour = next;
    },
    reset: () => {
      behaviour = {};
    },
    down: stop,
    up: async () => {
      if (server === undefined) await listen(port);
    },
    async waitForAccepted(count, pathPrefix, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (accepted(pathPrefix).length < count) {
        if (Date.now() > deadline) {
          throw new Error(`timed out after ${timeoutMs} ms waiting for ${count} accepted deliveries${pathPrefix ? ` to ${pathPrefix}` : ''}; got ${accepted(pathPrefix).length} of ${deliveries.length} requests`);
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      return accepted(pathPrefix);
    },
    close: stop,
  };
}

/** CLI: a standalone receiver another process (the chaos suite) can drive over HTTP. */
async function main(argv: string[]): Promise<void> {
  const value = (flag: string): string | undefined => {
    const index = argv.indexOf(flag);
    return index < 0 ? undefined : argv[index + 1];
  };
  const receiver = await startWebhookReceiver({
    port: Number(value('--port') ?? 0),
    host: value('--host') ?? '127.0.0.1',
    jwksUrl: value('--jwks-url'),
    hmacSecret: value('--hmac-secret'),
  });
  process.stdout.write(`webhook receiver listening on ${receiver.url} (deliveries: ${receiver.url}/_receiver/deliveries)\n`);
  const shutdown = (): void => {
    receiver.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).catch((error: Error) => {
    process.stderr.write(`webhook receiver: ${error.message}\n`);
    process.exit(1);
  });
}
