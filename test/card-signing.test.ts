// Agent card signatures (spec 8.4), checked the way a stranger would check them: the payload is
// rebuilt here from the card with a serializer written for this test, not with our signing code.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyAgentCardSignature, type AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { base64url, decodeProtectedHeader, flattenedVerify, importJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCardSigningPayload, signAgentCard } from '../agent-card/sign.ts';
import { loadOrCreatePrivateJwk, publicJwkOf } from '../src/auth/keys/key-file.ts';
import type { AgentCard } from '../src/protocol/types.ts';

const card: AgentCard = {
  name: 'a2a-gateway demo agent',
  description: 'A durable A2A 1.0 gateway: tasks survive closed connections, killed workers and restarts.',
  supportedInterfaces: [
    { url: 'https://agents.example.com/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: 'https://agents.example.com/a2a/v1', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
  ],
  version: '0.1.0',
  capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: true },
  securitySchemes: {
    bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT', description: 'A JWT from a trusted issuer — “npm run token” mints one locally.' } },
  },
  securityRequirements: [{ schemes: { bearer: { list: ['a2a:read'] } } }],
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'echo',
      name: 'Echo',
      description: 'Repeats the message back, in steps, streaming progress.',
      tags: ['demo', 'echo'],
      examples: ['hello', 'count to 3 ✓'],
    },
  ],
};

/** RFC 8785 for plain JSON data like the card: sorted keys, JSON.stringify for scalars. */
function jcs(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${jcs(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Checks one signature of `signed` against `publicJwk` as an independent verifier would. */
async function verifyIndependently(signed: AgentCard, publicJwk: JWK): Promise<void> {
  const { signatures, ...unsigned } = signed;
  const signature = signatures?.[0];
  if (signature === undefined) throw new Error('no signature');
  await flattenedVerify(
    { protected: signature.protected, signature: signature.signature, payload: base64url.encode(jcs(unsigned)) },
    await importJWK(publicJwk, publicJwk.alg),
  );
}

/** The same data with every object's keys in reverse order. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).reverse().map(([k, v]) => [k, reordered(v)]));
  }
  return value;
}

describe('agent card signing', () => {
  let dir: string;
  let privateJwk: JWK;
  let publicJwk: JWK;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'a2a-card-signing-'));
    privateJwk = await loadOrCreatePrivateJwk(join(dir, 'card-signing-key.json'), { alg: 'ES256', use: 'sig' });
    publicJwk = publicJwkOf(privateJwk);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('produces a detached JWS an independent verifier accepts', async () => {
    const jku = 'https://agents.example.com/.well-known/jwks.json';
    const signature = await signAgentCard(card, { privateJwk }, { jku });
    expect(Object.keys(signature).sort()).toEqual(['protected', 'signature']);

    const header = decodeProtectedHeader(signature);
    expect(header).toEqual({ alg: 'ES256', typ: 'JOSE', kid: publicJwk.kid, jku });
    expect(publicJwk.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const signed: AgentCard = { ...card, signatures: [signature] };
    await expect(verifyIndependently(signed, publicJwk)).resolves.toBeUndefined();
    // The payload we sign is exactly the canonical card: nothing in this card is a default.
    expect(agentCardSigningPayload(signed)).toBe(jcs(card));
  });

  it('leaves jku out unless asked for it', async () => {
    const signature = await signAgentCard(card, { privateJwk });
    expect(decodeProtectedHeader(signature)).toEqual({ alg: 'ES256', typ: 'JOSE', kid: publicJwk.kid });
  });

  it('fails verification once the card is changed', async () => {
    const signature = await signAgentCard(card, { privateJwk });
    const tampered: AgentCard = { ...card, description: `${card.description} Also mines bitcoin.`, signatures: [signature] };
    await expect(verifyIndependently(tampered, publicJwk)).rejects.toThrow(/signature verification failed/);
  });

  it('still verifies with the same card serialized in another key order', async () => {
    const signature = await signAgentCard(card, { privateJwk });
    const copy = JSON.parse(JSON.stringify(reordered({ ...card, signatures: [signature] }))) as AgentCard;
    expect(JSON.stringify(copy)).not.toBe(JSON.stringify({ ...card, signatures: [signature] }));
    await expect(verifyIndependently(copy, publicJwk)).resolves.toBeUndefined();
  });

  it('signs with an Ed25519 key too', async () => {
    const edKey = await loadOrCreatePrivateJwk(join(dir, 'ed25519.json'), { alg: 'EdDSA', use: 'sig' });
    const signature = await signAgentCard(card, { privateJwk: edKey });
    expect(decodeProtectedHeader(signature)).toMatchObject({ alg: 'EdDSA', typ: 'JOSE', kid: edKey.kid });
    await expect(verifyIndependently({ ...card, signatures: [signature] }, publicJwkOf(edKey))).resolves.toBeUndefined();
  });

  it('canonicalizes the example of spec 8.4.1 exactly', () => {
    const fragment = {
      name: 'Example Agent',
      description: '',
      capabilities: { streaming: false, pushNotifications: false, extensions: [] },
      skills: [],
    } as unknown as AgentCard;
    expect(agentCardSigningPayload(fragment)).toBe(
      '{"capabilities":{"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}',
    );
  });

  it('drops unset and empty non-required fields but keeps required ones', () => {
    const sparse = {
      ...card,
      signatures: [{ protected: 'x', signature: 'y' }],
      documentationUrl: undefined,
      securitySchemes: {},
      skills: [{ id: 's', name: 'S', description: 'd', tags: [], examples: [] }],
      supportedInterfaces: [{ url: 'https://a.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    } as AgentCard;
    const payload = JSON.parse(agentCardSigningPayload(sparse)) as Record<string, unknown>;
    expect(payload).not.toHaveProperty('signatures');
    expect(payload).not.toHaveProperty('documentationUrl');
    expect(payload).not.toHaveProperty('securitySchemes');
    expect(payload.skills).toEqual([{ description: 'd', id: 's', name: 'S', tags: [] }]);
    expect(payload.supportedInterfaces).toEqual([{ protocolBinding: 'JSONRPC', protocolVersion: '1.0', url: 'https://a.example/rpc' }]);
  });

  it('agrees with the official a2a-js verifier, including on a bearer requirement without scopes', async () => {
    // An empty scope list is where readings of 8.4.1 diverge most; a2a-js drops it entirely.
    const withoutScopes: AgentCard = { ...card, securityRequirements: [{ schemes: { bearer: { list: [] } } }] };
    for (const candidate of [card, withoutScopes]) {
      const signature = await signAgentCard(candidate, { privateJwk });
      const verify = verifyAgentCardSignature(async () => publicJwk);
      await expect(verify({ ...candidate, signatures: [signature] } as unknown as SdkAgentCard)).resolves.toBeUndefined();
    }
  });
});
