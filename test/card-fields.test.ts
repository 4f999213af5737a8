// Card fields an operator configures per agent (provider, documentation and icon URLs, notes
// on getting credentials), and a rotation of the card-signing key: the previous key stays on
// /.well-known/jwks.json beside the new one, so a card signed before the rotation still
// verifies against the keys served after it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyAgentCardSignature, type AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { createLocalJWKSet, type JWK, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreatePrivateJwk } from '../src/auth/keys/key-file.ts';
import { startTestGateway, type TestGateway } from './support/harness.ts';

let dir: string;
let oldKeyFile: string;
let newKeyFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'a2a-card-fields-'));
  oldKeyFile = join(dir, 'old.json');
  newKeyFile = join(dir, 'new.json');
  await loadOrCreatePrivateJwk(oldKeyFile, { alg: 'ES256', use: 'sig' });
  await loadOrCreatePrivateJwk(newKeyFile, { alg: 'ES256', use: 'sig' });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Card {
  provider?: unknown;
  documentationUrl?: string;
  iconUrl?: string;
  securitySchemes?: Record<string, Record<string, { description?: string }>>;
  signatures?: { protected: string }[];
}

async function cardOf(gw: TestGateway, path = ''): Promise<Card> {
  return (await (await fetch(`${gw.url}${path}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as Card;
}

/** Verifies the card with the official SDK, looking its key up by kid in `jwks`. */
async function verifies(card: Card, jwks: JSONWebKeySet): Promise<boolean> {
  const keys = createLocalJWKSet(jwks);
  try {
    await verifyAgentCardSignature(async (kid: string) => keys({ alg: 'ES256', kid }))(card as unknown as SdkAgentCard);
    return true;
  } catch {
    return false;
  }
}

describe('card fields per agent', () => {
  it('shows provider, documentation and icon URLs and security notes; agents inherit the top-level ones', async () => {
    const gw = await startTestGateway({
      name: 'card-fields',
      config: {
        auth: { enabled: true },
        agentProvider: { organization: 'Example Corp', url: 'https://example.com' },
        agents: {
          alpha: { adapter: 'demo', card: { documentationUrl: 'https://docs.example.com/alpha', iconUrl: 'https://example.com/alpha.png', securityNotes: 'Ask platform@example.com for a token.' } },
          beta: { adapter: 'demo', card: { provider: { organization: 'Beta Team', url: 'https://beta.example.com' } } },
        },
      },
    });
    try {
      const alpha = await cardOf(gw, '/agents/alpha');
      expect(alpha.provider).toEqual({ organization: 'Example Corp', url: 'https://example.com' });
      expect(alpha.documentationUrl).toBe('https://docs.example.com/alpha');
      expect(alpha.iconUrl).toBe('https://example.com/alpha.png');
      expect(alpha.securitySchemes?.bearer?.httpAuthSecurityScheme?.description).toMatch(/Ask platform@example\.com for a token\.$/);
      const beta = await cardOf(gw, '/agents/beta');
      expect(beta.provider).toEqual({ organization: 'Beta Team', url: 'https://beta.example.com' });
      expect(beta.documentationUrl).toBeUndefined();
    } finally {
      await gw.close();
    }
  });
});

describe('rotating the card-signing key', () => {
  it('keeps a card signed before the rotation verifiable against the keys served after it', async () => {
    const before = await startTestGateway({ name: 'rotate-old', config: { cardSigning: true, cardSigningKeyFile: oldKeyFile } });
    const oldCard = await cardOf(before);
    await before.close();

    // Push notifications off: the JWKS then holds the card's keys only (no webhook signing key).
    const after = await startTestGateway({ name: 'rotate-new', config: { cardSigning: true, cardSigningKeyFile: newKeyFile, cardSigningPreviousKeyFiles: [oldKeyFile], push: { enabled: false } } });
    try {
      const jwks = (await (await fetch(`${after.url}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
      expect(jwks.keys).toHaveLength(2);
      expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
      const newCard = await cardOf(after);
      expect(await verifies(newCard, jwks)).toBe(true);
      expect(await verifies(oldCard, jwks)).toBe(true);
      // The overlap is over once the previous key is removed: the old card no longer verifies.
      const only = { keys: jwks.keys.filter((k) => k.kid === JSON.parse(Buffer.from(newCard.signatures?.[0]?.protected ?? '', 'base64url').toString()).kid) };
      expect(await verifies(oldCard, only)).toBe(false);
    } finally {
      await after.close();
    }
  });
});
