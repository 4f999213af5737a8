// Refusals close the connection instead of reading what they refuse (issue 24, item 8): a
// request refused from its headers (413 for its declared size, 429 for its sender's byte rate)
// is answered before a byte of its body is sent, with Connection: close, and the gateway reads
// at most refusedBodyDrainBytes (64 KiB by default) more before it lets the connection go: a
// client that goes on uploading a 4 MiB body cannot deliver it.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, textMessage, type TestGateway } from './support/harness.ts';
import { createTestIssuer, type TestIssuer } from './support/identity.ts';


interface RefusedUpload {
  /** What the gateway answered before the client sent any of the body. */
  head: string;
  /** Body bytes the client's socket accepted before the gateway let the connection go. */
  written: number;
  /** True when the whole declared body could be sent without the connection failing (the gateway read it all). */
  wroteAll: boolean;
}

/**
 * Sends a request head declaring a body of `declared` bytes, waits for the answer without sending any
 * of it, then uploads the body in 64 KiB chunks, as fast as the connection takes them.
 */
function refusedUpload(gatewayUrl: string, path: string, headers: Record<string, string>, declared: number): Promise<RefusedUpload> {
  const { hostname, port } = new URL(gatewayUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let head = '';
    let written = 0;
    let failed = false;
    let uploading = false;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const timer = setTimeout(() => reject(new Error(`no answer and no close after 20 s (answer so far: ${JSON.stringify(head.slice(0, 200))})`)), 20_000);
    const finish = (): void => {
      clearTimeout(timer);
      resolve({ head, written, wroteAll: !failed && written >= declared });
    };
    const upload = async (): Promise<void> => {
      while (written < declared && !failed && !socket.destroyed) {
        const piece = chunk.subarray(0, Math.min(chunk.length, declared - written));
        const more = socket.write(piece);
        written += piece.length;
        if (!more) await new Promise((drained) => socket.once('drain', drained).once('close', drained));
      }
    };
    socket.on('connect', () => {
      const lines = [`POST ${path} HTTP/1.1`, 'Host: gateway', 'Content-Type: application/json', 'A2A-Version: 1.0', `Content-Length: ${declared}`];
      for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    socket.on('data', (data: Buffer) => {
      head += data.toString('latin1');
      if (!uploading && head.includes('\r\n\r\n')) {
        uploading = true;
        void upload();
      }
    });
    socket.on('error', () => {
      failed = true;
    });
    socket.on('close', finish);
  });
}

let gw: TestGateway;
let issuer: TestIssuer;

beforeAll(async () => {
  issuer = await createTestIssuer();
  // The default refusedBodyDrainBytes; a byte rate whose bucket one small message empties.
  gw = await startTestGateway({
    name: 'refusal-close',
    inProcessWorker: false,
    config: {
      auth: { enabled: true, issuers: [issuer.config] },
      limits: { requestsPerSecond: 0, maxActiveTasks: 0, unauthenticatedPerSecond: 0, ingressBytesPerSecond: 1, ingressBurstBytes: 1024, storedBytesPerSecond: 0 },
    },
  });
});

afterAll(async () => {
  await gw?.close();
});

describe('a refusal from the headers', () => {
  it('413 for the declared size: answered before the body, Connection: close, and the 4 MiB body is not read', async () => {
    const token = await issuer.token({ sub: 'uploader' });
    const refused = await refusedUpload(gw.url, '/a2a/jsonrpc', { Authorization: `Bearer ${token}` }, 4 * 1024 * 1024);
    expect(refused.head).toMatch(/^HTTP\/1\.1 413 /);
    expect(refused.head.toLowerCase()).toContain('connection: close');
    expect(refused.wroteAll).toBe(false);
  });

  it("429 for the sender's byte rate: answered before the body, Connection: close, and the body is not read", async () => {
    const token = await issuer.token({ sub: 'sender' });
    // Empties the sender's 1 KiB bucket (refilling at a byte a second).
    const first = await fetch(`${gw.url}/a2a/rest/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` },
      body: JSON.stringify({ message: textMessage(`echo ${'x'.repeat(900)}`), configuration: { returnImmediately: true } }),
    });
    expect(first.status).toBe(200);
    // Under maxBodyBytes, so only the byte rate refuses it.
    const refused = await refusedUpload(gw.url, '/a2a/rest/message:send', { Authorization: `Bearer ${token}` }, 1_000_000);
    expect(refused.head).toMatch(/^HTTP\/1\.1 429 /);
    expect(refused.head.toLowerCase()).toContain('connection: close');
    expect(refused.head.toLowerCase()).toMatch(/retry-after: \d+/);
    expect(refused.head).toContain('limits.ingressBytesPerSecond');
    expect(refused.wroteAll).toBe(false);
  });
});
