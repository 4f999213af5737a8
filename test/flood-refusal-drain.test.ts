// A flood's refusals drain less, each a different amount (bindings/http/exchange.ts,
// floodDrainBytes): an address past its unauthenticated limit is answered 429, and what its
// connections' bodies are still allowed to send before the gateway lets go is between half and
// all of refusedBodyDrainBytes, at random, so connections trickling in step are not all cut at
// once (abuse row 1). A refusal that is not a flood's (the address's first failures, answered
// 401) still drains its whole body and ends cleanly.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/harness.ts';
import { createTestIssuer } from './support/identity.ts';

const DRAIN = 64 * 1024;
const CHUNK = 4 * 1024;

let gw: TestGateway;

beforeAll(async () => {
  const issuer = await createTestIssuer();
  gw = await startTestGateway({
    name: 'flood-drain',
    inProcessWorker: false,
    config: {
      auth: { enabled: true, issuers: [issuer.config] },
      refusedBodyDrainBytes: DRAIN,
      // One failure per address, then 429 for the next hundred seconds.
      limits: { unauthenticatedPerSecond: 0.01, unauthenticatedBurst: 1 },
    },
  });
});

afterAll(async () => {
  await gw?.close();
});

interface Trickle {
  status: string;
  /** Body bytes the gateway had taken when it let the connection go (or all of them). */
  sent: number;
  /** True when the whole body was sent and the gateway ended the connection itself, cleanly. */
  complete: boolean;
}

/** Uploads a `declared`-byte body without credentials, CHUNK bytes every `everyMs`, from `localAddress`. */
function trickle(declared: number, everyMs: number, localAddress: string): Promise<Trickle> {
  const { port } = new URL(gw.url);
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress });
    let head = '';
    let sent = 0;
    let reset = false;
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(`POST /a2a/jsonrpc HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: ${declared}\r\n\r\n`);
      timer = setInterval(() => {
        if (sent >= declared || socket.destroyed) return;
        const piece = Math.min(CHUNK, declared - sent);
        socket.write(Buffer.alloc(piece, 0x20), (error) => {
          if (error === null || error === undefined) sent += piece;
        });
      }, everyMs);
    });
    socket.on('data', (data: Buffer) => (head += data.toString('latin1')));
    socket.on('error', () => (reset = true));
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ status: head.slice(9, 12), sent, complete: !reset && sent >= declared });
    });
  });
}

describe("a flood's refusals", () => {
  it('a first failure drains its whole body and ends cleanly; the flood after it is cut between half and all of the bound, at different points', async () => {
    const address = '127.0.0.3';
    const first = await trickle(48 * 1024, 5, address);
    expect(first.status).toBe('401');
    expect(first.complete).toBe(true);
    // Sixteen connections trickling in step from the same address, now past its limit.
    const flood = await Promise.all(Array.from({ length: 16 }, () => trickle(1_000_000, 10, address)));
    expect(new Set(flood.map((upload) => upload.status))).toEqual(new Set(['429']));
    for (const upload of flood) {
      expect(upload.complete).toBe(false);
      // What the gateway read, give or take the chunks in flight when it let go.
      expect(upload.sent).toBeGreaterThanOrEqual(DRAIN / 2 - CHUNK);
      expect(upload.sent).toBeLessThanOrEqual(DRAIN + 8 * CHUNK);
    }
    const cuts = flood.map((upload) => upload.sent).sort((a, b) => a - b);
    // An exact bound cuts them all within a chunk or two of each other.
    expect((cuts.at(-1) as number) - (cuts[0] as number)).toBeGreaterThan(DRAIN / 8);
  });
});
