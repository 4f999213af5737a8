// The card-verification snippet of docs/card-verification.md, run as a client would run it:
// the block in the doc is examples/card-verification/verify-card.mjs, whose code verifies the
// cards a started gateway serves against its JWKS, and refuses a card changed after signing.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startTestGateway, type TestGateway } from './support/harness.ts';

interface Snippet {
  verifyAgentCard(card: Record<string, unknown>, jwksUrl: string): Promise<string>;
  fetchVerifiedCard(cardUrl: string, jwksUrl: string): Promise<Record<string, unknown>>;
}

const SNIPPET_FILE = join(ROOT, 'examples/card-verification/verify-card.mjs');
let snippet: Snippet;
let gw: TestGateway;
let secured: TestGateway;

beforeAll(async () => {
  // A path in a variable: the module is plain JavaScript, loaded as a client would load it.
  const file = SNIPPET_FILE;
  snippet = (await import(file)) as Snippet;
  gw = await startTestGateway({
    name: 'examples-card',
    config: { cardSigning: true, agents: { demo: { adapter: 'demo', adapterOptions: { stepMs: 20 } }, other: { adapter: 'demo', card: { name: 'Other' } } } },
  });
  // Authentication on: the card declares security requirements (with empty scope lists).
  secured = await startTestGateway({ name: 'examples-card-auth', config: { cardSigning: true, auth: { enabled: true } } });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await secured?.close();
});

describe('docs/card-verification.md', () => {
  it('shows the very code CI runs', () => {
    const doc = readFileSync(join(ROOT, 'docs/card-verification.md'), 'utf8');
    const block = /<!-- verify-card\.mjs[^>]*-->\n```js\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block).toBe(readFileSync(SNIPPET_FILE, 'utf8'));
  });

  it('verifies every card the gateway serves against its JWKS', async () => {
    const jwks = `${gw.url}/.well-known/jwks.json`;
    for (const path of ['', '/agents/demo', '/agents/other']) {
      const card = await snippet.fetchVerifiedCard(`${gw.url}${path}/.well-known/agent-card.json`, jwks);
      expect((card.signatures as unknown[]).length).toBeGreaterThan(0);
    }
    const card = await snippet.fetchVerifiedCard(`${secured.url}/.well-known/agent-card.json`, `${secured.url}/.well-known/jwks.json`);
    expect(card.securityRequirements).toBeDefined();
  });

  it('refuses a card changed after it was signed, and an unsigned one', async () => {
    const jwks = `${gw.url}/.well-known/jwks.json`;
    const card = (await (await fetch(`${gw.url}/agents/other/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as Record<string, unknown>;
    await expect(snippet.verifyAgentCard(card, jwks)).resolves.toEqual(expect.any(String));
    await expect(snippet.verifyAgentCard({ ...card, name: 'Forged' }, jwks)).rejects.toThrow(/no signature of the card verifies/);
    const interfaces = card.supportedInterfaces as { url: string }[];
    const redirected = { ...card, supportedInterfaces: interfaces.map((face) => ({ ...face, url: face.url.replace(gw.url, 'https://evil.example') })) };
    await expect(snippet.verifyAgentCard(redirected, jwks)).rejects.toThrow(/no signature of the card verifies/);
    await expect(snippet.verifyAgentCard({ ...card, signatures: [] }, jwks)).rejects.toThrow(/not signed/);
  });
});
