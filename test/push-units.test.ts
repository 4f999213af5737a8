// Unit tests of the pure pieces of push delivery and schedules: backoff, Retry-After, the
// receiver policy's address classes and allow-list, Standard Webhooks signatures (checked by the
// standardwebhooks library and by Node's crypto), cron arithmetic across missed windows.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../src/config/schema.ts';
import { webhookHeaders } from '../src/push/delivery.ts';
import type { StoredPushConfig } from '../src/push/push-config.ts';
import { backoffDelayMs } from '../src/push/retry-policy.ts';
import { ReceiverPolicy } from '../src/push/receiver-policy.ts';
import { retryAfterMs } from '../src/push/webhook-sender.ts';
import { verifyEd25519Signature, WebhookSigner } from '../src/push/webhook-signature.ts';
import { timesBetween } from '../src/schedules/schedule-timing.ts';

describe('retry policy', () => {
  const settings = { initialDelayMs: 1_000, maxDelayMs: 60_000, horizonMs: 3_600_000 };
  it('doubles from the initial delay up to the maximum, half fixed and half jitter', () => {
    expect(backoffDelayMs(1, settings, () => 0)).toBe(500);
    expect(backoffDelayMs(1, settings, () => 1)).toBe(1_000);
    expect(backoffDelayMs(3, settings, () => 1)).toBe(4_000);
    expect(backoffDelayMs(30, settings, () => 0)).toBe(30_000);
    expect(backoffDelayMs(30, settings, () => 1)).toBe(60_000);
  });

  it('reads Retry-After in seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('7', now)).toBe(7_000);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});

describe('receiver policy', () => {
  const policy = new ReceiverPolicy({ allowedHosts: ['10.20.0.0/16', '127.0.0.1', 'hooks.internal'], maxUrlLength: 100 });

  it('names the class of every blocked address and lets public unicast through', () => {
    expect(policy.blockedClassOf('8.8.8.8')).toBeUndefined();
    expect(policy.blockedClassOf('2606:4700::1111')).toBeUndefined();
    expect(policy.blockedClassOf('127.0.0.2')).toBe('a loopback address');
    expect(policy.blockedClassOf('169.254.169.254')).toMatch(/link-local/);
    expect(policy.blockedClassOf('100.64.0.1')).toMatch(/carrier-grade NAT/);
    expect(policy.blockedClassOf('::ffff:169.254.169.254')).toMatch(/IPv4-mapped IPv6 address \(::ffff:0:0\/96\) carrying 169\.254\.169\.254, a link-local/);
    expect(policy.blockedClassOf('fd00::1')).toMatch(/unique-local/);
  });

  it('lets allow-listed addresses, blocks and names through, and nothing else of their class', () => {
    expect(policy.blockedClassOf('10.20.3.4')).toBeUndefined();
    expect(policy.blockedClassOf('10.21.0.1')).toMatch(/private/);
    expect(policy.blockedClassOf('127.0.0.1')).toBeUndefined();
    expect(policy.blockedClassOf('::ffff:127.0.0.1')).toBeUndefined();
    expect(policy.blockedClassOf('127.0.0.2')).toBe('a loopback address');
  });

  it('judges an IPv6 address carrying an IPv4 address by the IPv4 address, in either notation', () => {
    const forms: [string, string, string][] = [
      ['::127.0.0.2', '::7f00:2', 'IPv4-compatible'],
      ['::ffff:127.0.0.2', '::ffff:7f00:2', 'IPv4-mapped'],
      ['::ffff:0:127.0.0.2', '::ffff:0:7f00:2', 'IPv4-translated'],
      ['64:ff9b::127.0.0.2', '64:ff9b::7f00:2', 'NAT64'],
      ['2002:7f00:2::127.0.0.2', '2002:7f00:2::1', '6to4'],
    ];
    for (const [dotted, hex, form] of forms) {
      for (const written of [dotted, hex]) expect(policy.blockedClassOf(written), written).toMatch(new RegExp(`^an? ${form} .* carrying 127\\.0\\.0\\.\\d, a loopback address$`));
    }
    expect(policy.blockedClassOf('64:ff9b::a9fe:a9fe')).toMatch(/carrying 169\.254\.169\.254, a link-local/);
    expect(policy.blockedClassOf('2002:a00:7::')).toMatch(/carrying 10\.0\.0\.7, a private/);
    expect(policy.blockedClassOf('::100.64.0.1')).toMatch(/carrying 100\.64\.0\.1, a carrier-grade NAT/);
    expect(policy.blockedClassOf('::ffff:0:239.1.2.3')).toMatch(/carrying 239\.1\.2\.3, a multicast/);
    expect(policy.blockedClassOf('64:ff9b::198.51.100.1')).toMatch(/carrying 198\.51\.100\.1, a reserved/);
    // A public IPv4 address is as reachable in any of these forms as written plainly, and an
    // allow-listed one is allowed in all of them.
    for (const reachable of ['::8.8.8.8', '::ffff:8.8.8.8', '::ffff:0:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1', '64:ff9b::10.20.3.4', '2002:a14:304::1']) {
      expect(policy.blockedClassOf(reachable), reachable).toBeUndefined();
    }
    // `::` and `::1` are IPv6's own unspecified and loopback addresses.
    expect(policy.blockedClassOf('::1')).toBe('a loopback address');
    expect(policy.blockedClassOf('::')).toBe('an unspecified address');
  });

  it('refuses IPv4-carrying forms whose IPv4 address cannot be read, and IPv6 outside global unicast', () => {
    expect(policy.blockedClassOf('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toMatch(/^a Teredo .* obfuscated$/);
    expect(policy.blockedClassOf('64:ff9b:1::808:808')).toMatch(/^a local-use NAT64 .* prefix length/);
    expect(policy.blockedClassOf('64:ff9b:0:0:1::7f00:1')).toMatch(/outside global unicast/);
    expect(policy.blockedClassOf('1234::1')).toMatch(/outside global unicast/);
  });

  it('refuses bad allow-list entries at start', () => {
    expect(ReceiverPolicy.validateAllowList(['10.0.0.0/33'])).toMatch(/CIDR/);
    expect(ReceiverPolicy.validateAllowList(['not a host!'])).toMatch(/neither/);
    expect(ReceiverPolicy.validateAllowList(['fd00::/8', 'example.com', '192.0.2.1'])).toBeUndefined();
  });

  it('checks a URL’s scheme, credentials and length', () => {
    expect(() => policy.checkUrl('ftp://example.com/x')).toThrow(/http or https/);
    expect(() => policy.checkUrl('https://a:b@example.com/x')).toThrow(/credentials/);
    expect(() => policy.checkUrl(`https://example.com/${'x'.repeat(100)}`)).toThrow(/at most 100/);
    expect(policy.checkUrl('https://example.com/hook').hostname).toBe('example.com');
  });
});

describe('Standard Webhooks signatures', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'k1' };
  const signer = new WebhookSigner(jwk);
  const publicJwk = { kty: jwk.kty, crv: jwk.crv, x: jwk.x };
  const body = '{"statusUpdate":{"taskId":"t1"}}';

  it('v1a verifies with the public key, and not for another body, id or timestamp', () => {
    const headers = signer.headers('t1.c1.1-0', body, undefined);
    const signed = { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'] };
    expect(signed.signature).toMatch(/^v1a,[A-Za-z0-9+/=]+$/);
    expect(verifyEd25519Signature(publicJwk, signed, body)).toBe(true);
    expect(verifyEd25519Signature(publicJwk, signed, `${body} `)).toBe(false);
    expect(verifyEd25519Signature(publicJwk, { ...signed, id: 't1.c1.2-0' }, body)).toBe(false);
    expect(verifyEd25519Signature(publicJwk, { ...signed, timestamp: String(Number(signed.timestamp) + 1) }, body)).toBe(false);
  });

  it('v1 (HMAC) verifies with the standardwebhooks library when the config has a whsec_ secret', () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const headers = signer.headers('t1.c1.1-0', body, secret);
    expect(headers['webhook-signature'].split(' ').map((s) => s.split(',')[0])).toEqual(['v1a', 'v1']);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
    expect(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(body, { ...headers })).toThrow();
  });
});

describe('what a webhook request carries (spec 4.3.3)', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const signer = new WebhookSigner({ ...privateKey.export({ format: 'jwk' }), kid: 'k1' });
  const config = (over: Partial<StoredPushConfig>): StoredPushConfig => ({ id: 'c1', taskId: 't1', url: 'https://hooks.example.com/a2a', createdAtMs: 0, ...over });
  const body = '{"statusUpdate":{"taskId":"t1"}}';

  it('Content-Type application/a2a+json; authentication as "Authorization: <scheme> <credentials>"; a token in X-A2A-Notification-Token', () => {
    const withAuth = webhookHeaders(config({ authentication: { scheme: 'Bearer', credentials: 's3cret' } }), 't1.c1.1-0', body, signer);
    expect(withAuth).toMatchObject({ 'Content-Type': 'application/a2a+json', Authorization: 'Bearer s3cret', 'webhook-id': 't1.c1.1-0' });
    expect(withAuth['X-A2A-Notification-Token']).toBeUndefined();
    const withToken = webhookHeaders(config({ token: 'opaque-token' }), 't1.c1.1-0', body, signer);
    expect(withToken).toMatchObject({ 'Content-Type': 'application/a2a+json', 'X-A2A-Notification-Token': 'opaque-token' });
    expect(withToken.Authorization).toBeUndefined();
    expect(withToken['webhook-signature']).toMatch(/^v1a,[^ ]+$/);
  });

  it('a whsec_ token signs (v1 beside v1a) and is never sent; a scheme without credentials sends nothing', () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const headers = webhookHeaders(config({ token: secret, authentication: { scheme: 'Bearer' } }), 't1.c1.1-0', body, signer);
    expect(Object.values(headers)).not.toContain(secret);
    expect(headers['X-A2A-Notification-Token']).toBeUndefined();
    expect(headers.Authorization).toBeUndefined();
    expect((headers['webhook-signature'] ?? '').split(' ').map((s) => s.split(',')[0])).toEqual(['v1a', 'v1']);
  });

  it('one webhook request times out after 10 s and a task holds at most 32 configs unless configured otherwise', () => {
    const push = configSchema.parse({}).push;
    expect(push).toMatchObject({ timeoutMs: 10_000, maxConfigsPerTask: 32, retryHorizonMs: 86_400_000 });
  });
});

describe('cron arithmetic for missed firings', () => {
  it('lists the planned times in a window, keeping the latest when there are too many', () => {
    const from = Date.parse('2026-03-01T00:00:00Z');
    const until = Date.parse('2026-03-01T05:30:00Z');
    expect(timesBetween('0 * * * *', 'UTC', from, until, 10)).toEqual({
      times: [1, 2, 3, 4, 5].map((h) => from + h * 3_600_000),
      omitted: 0,
    });
    expect(timesBetween('0 * * * *', 'UTC', from, until, 2)).toEqual({ times: [4, 5].map((h) => from + h * 3_600_000), omitted: 3 });
  });

  it('follows the time zone across a daylight-saving change', () => {
    // 09:00 in Paris is 08:00 UTC before 29 March 2026 and 07:00 UTC after.
    const { times } = timesBetween('0 9 * * *', 'Europe/Paris', Date.parse('2026-03-27T12:00:00Z'), Date.parse('2026-03-31T12:00:00Z'), 10);
    expect(times.map((t) => new Date(t).toISOString())).toEqual([
      '2026-03-28T08:00:00.000Z',
      '2026-03-29T07:00:00.000Z',
      '2026-03-30T07:00:00.000Z',
      '2026-03-31T07:00:00.000Z',
    ]);
  });
});
