// Rotating the webhook signing key without a receiver ever failing: with the old key listed in
// push.signingPreviousKeyFiles, every delivery during push.signingKeyOverlapSeconds carries a
// v1a signature by the new key and one by the old key (Standard Webhooks allows several), so a
// receiver that holds only the old key and one that holds only the new key both verify it, and
// the standardwebhooks library still verifies the v1 (HMAC) signature beside them. The overlap
// runs from the moment the new key first signed, recorded once in Redis; after it the old key
// signs nothing. Real Redis, real worker roles, real receivers.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JWK } from 'jose';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agents } from '../src/agents/agents.ts';
import { createLogger } from '../src/logging/logger.ts';
import { WebhookSigner, verifyEd25519Signature } from '../src/push/webhook-signature.ts';
import { startWorkerRole, type WorkerHandle } from '../src/runtime/worker-role.ts';
import { ROOT, rpc, startTestGateway, textMessage, waitFor, type TestGateway } from './support/harness.ts';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from './support/webhook-receiver.ts';

function ed25519(kid: string): { privateJwk: JWK; publicJwk: JWK } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const privateJwk = { ...(privateKey.export({ format: 'jwk' }) as JWK), kid, alg: 'EdDSA', use: 'sig' };
  return { privateJwk, publicJwk: { kty: privateJwk.kty, crv: privateJwk.crv, x: privateJwk.x, kid } };
}

const OLD = ed25519('webhook-old');
const NEW = ed25519('webhook-new');
const HMAC_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const OVERLAP_SECONDS = 3_600;

let dir: string;
let oldOnly: WebhookReceiver;
let newOnly: WebhookReceiver;
const started: { gw: TestGateway; worker: WorkerHandle }[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'a2a-push-rotation-'));
  await writeFile(join(dir, 'old.json'), JSON.stringify(OLD.privateJwk));
  await writeFile(join(dir, 'new.json'), JSON.stringify(NEW.privateJwk));
  oldOnly = await startWebhookReceiver({ publicKeys: [OLD.publicJwk], hmacSecret: HMAC_SECRET });
  newOnly = await startWebhookReceiver({ publicKeys: [NEW.publicJwk], hmacSecret: HMAC_SECRET });
});

afterAll(async () => {
  for (const { gw, worker } of started) {
    await worker.close();
    await gw.close();
  }
  await oldOnly?.close();
  await newOnly?.close();
  await rm(dir, { recursive: true, force: true });
});

/**
 * A gateway signing with the new key, the old one listed as previous; `newKeySignedSinceMs`,
 * when given, is what Redis holds as the moment the new key first signed (an earlier process's
 * record) before the worker starts.
 */
async function rotatedGateway(newKeySignedSinceMs?: number): Promise<TestGateway> {
  const gw = await startTestGateway({
    name: 'pushrot',
    inProcessWorker: false,
    config: {
      push: {
        allowedHosts: ['127.0.0.1'],
        sweepIntervalMs: 200,
        signingKeyFile: join(dir, 'new.json'),
        signingPreviousKeyFiles: [join(dir, 'old.json')],
        signingKeyOverlapSeconds: OVERLAP_SECONDS,
      },
    },
  });
  if (newKeySignedSinceMs !== undefined) await gw.redis.set(`${gw.prefix}:{pushkeys}:since:${NEW.privateJwk.kid}`, String(newKeySignedSinceMs));
  const worker = await startWorkerRole(gw.config, await Agents.load(gw.config, ROOT), createLogger('silent'), { baseDir: ROOT });
  started.push({ gw, worker });
  return gw;
}

/** Every event of a new task, delivered to `receiver` at a path of its own, up to the terminal one. */
async function deliveredTask(gw: TestGateway, receiver: WebhookReceiver): Promise<ReceivedDelivery[]> {
  const path = `/rotation/${randomBytes(6).toString('hex')}`;
  const { body } = await rpc(gw.jsonRpcUrl, 'SendMessage', {
    message: textMessage('echo rotation'),
    configuration: { taskPushNotificationConfig: { url: `${receiver.url}${path}`, token: HMAC_SECRET } },
  });
  expect(body.error).toBeUndefined();
  return waitFor(() => {
    const got = receiver.accepted(path);
    const last = got.at(-1)?.json as { statusUpdate?: { status?: { state?: string } } } | undefined;
    return last?.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED' ? got : undefined;
  }, 15_000, `the deliveries to ${path}`);
}

const v1aCount = (delivery: ReceivedDelivery): number => (delivery.headers['webhook-signature'] ?? '').split(' ').filter((s) => s.startsWith('v1a,')).length;

/** The standardwebhooks library's check of the v1 signature among the others. */
function hmacVerifies(delivery: ReceivedDelivery): boolean {
  try {
    new Webhook(HMAC_SECRET).verify(delivery.body, {
      'webhook-id': delivery.headers['webhook-id'] ?? '',
      'webhook-timestamp': delivery.headers['webhook-timestamp'] ?? '',
      'webhook-signature': delivery.headers['webhook-signature'] ?? '',
    });
    return true;
  } catch {
    return false;
  }
}

describe('webhook signing key rotation', () => {
  it('during the overlap a receiver holding only the old key and one holding only the new key both verify every delivery', async () => {
    const gw = await rotatedGateway();
    const since = Number(await gw.redis.get(`${gw.prefix}:{pushkeys}:since:${NEW.privateJwk.kid}`));
    expect(since).toBeGreaterThan(Date.now() - 60_000);
    for (const receiver of [oldOnly, newOnly]) {
      const deliveries = await deliveredTask(gw, receiver);
      expect(deliveries.length).toBeGreaterThan(1);
      for (const delivery of deliveries) {
        expect(delivery.ed25519Valid).toBe(true);
        expect(v1aCount(delivery)).toBe(2);
        expect(delivery.hmacValid).toBe(true);
        expect(hmacVerifies(delivery)).toBe(true);
      }
    }
    // Both public keys are on the JWKS receivers fetch.
    const jwks = (await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
    expect(jwks.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([OLD.privateJwk.kid, NEW.privateJwk.kid]));
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
  }, 40_000);

  it('after the overlap the old key signs nothing: only a receiver holding the new key verifies', async () => {
    // Another process first signed with the new key longer ago than the overlap: a restart does
    // not open it again.
    const gw = await rotatedGateway(Date.now() - OVERLAP_SECONDS * 1000 - 60_000);
    for (const [receiver, verifies] of [
      [oldOnly, false],
      [newOnly, true],
    ] as const) {
      const deliveries = await deliveredTask(gw, receiver);
      for (const delivery of deliveries) {
        expect(v1aCount(delivery)).toBe(1);
        expect(delivery.ed25519Valid).toBe(verifies);
        expect(hmacVerifies(delivery)).toBe(true);
      }
    }
  }, 40_000);

  it('one signer co-signs while the overlap lasts and stops at its end', () => {
    const untilMs = Date.parse('2026-06-01T12:00:00Z');
    const signer = new WebhookSigner(NEW.privateJwk, { keys: [OLD.privateJwk], untilMs });
    const body = '{"statusUpdate":{"taskId":"t1"}}';
    const check = (at: number): { old: boolean; current: boolean; count: number } => {
      const headers = signer.headers('t1.c1.1-0', body, undefined, new Date(at));
      const signed = { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'] };
      return { old: verifyEd25519Signature(OLD.publicJwk, signed, body), current: verifyEd25519Signature(NEW.publicJwk, signed, body), count: signed.signature.split(' ').length };
    };
    expect(check(untilMs - 1)).toEqual({ old: true, current: true, count: 2 });
    expect(check(untilMs)).toEqual({ old: false, current: true, count: 1 });
    expect(check(untilMs + 86_400_000)).toEqual({ old: false, current: true, count: 1 });
  });
});
