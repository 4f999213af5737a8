// An agent in front of a downstream A2A agent (the a2a adapter) publishes the downstream's own
// name, description and skills on its card, where its configuration sets none; what the
// configuration sets wins. The card stays a valid A2A 1.0 card of this gateway: its interfaces
// are the gateway's URLs, never the downstream's, and it verifies when signed.
import { AgentCard as SdkAgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';
import { createRemoteJWKSet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnDownstreamAgent, type DownstreamAgentProcess } from './support/downstream-agent.ts';
import { startTestGateway, type TestGateway } from './support/harness.ts';

const FAST = { retryInitialDelayMs: 50, retryMaxDelayMs: 500, pollInitialDelayMs: 50, pollMaxDelayMs: 300 };

interface Card {
  name: string;
  description: string;
  version: string;
  supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[];
  skills: { id: string; name: string; description: string }[];
  capabilities: Record<string, unknown>;
  defaultInputModes: string[];
  defaultOutputModes: string[];
  signatures?: { protected: string; signature: string }[];
}

async function cardAt(url: string): Promise<Card> {
  const response = await fetch(`${url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
  expect(response.status).toBe(200);
  return (await response.json()) as Card;
}

let downstream: DownstreamAgentProcess;
let gw: TestGateway;

beforeAll(async () => {
  downstream = await spawnDownstreamAgent();
  gw = await startTestGateway({
    name: 'remote-a2a-card',
    config: {
      cardSigning: true,
      agents: {
        demo: { adapter: 'demo', adapterOptions: { stepMs: 20 } },
        // Routed as "weather", configured with nothing but the downstream's URL.
        weather: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST } },
        // Every card field set: the configuration wins over the downstream.
        configured: {
          adapter: 'a2a',
          adapterOptions: { url: downstream.url, ...FAST },
          card: { name: 'Configured Desk', description: 'Set by the operator.', skills: [{ id: 'ours', name: 'Ours', description: 'The operator\'s skill.' }] },
        },
        // A downstream that cannot be reached: the adapter's own fields stand in.
        unreachable: { adapter: 'a2a', adapterOptions: { url: 'http://127.0.0.1:9', ...FAST, requestTimeoutMs: 500 } },
        // Only the name set: the rest still comes from the downstream.
        named: { adapter: 'a2a', adapterOptions: { url: downstream.url, ...FAST }, card: { name: 'Named Desk' } },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await downstream?.close();
});

describe('the card of an agent in front of a downstream agent', () => {
  it('carries the downstream agent\'s own name, description and skills, not the route name', async () => {
    const card = await cardAt(`${gw.url}/agents/weather`);
    expect(card.name).toBe('downstream test agent');
    expect(card.description).toContain('scripted A2A agent');
    // Authentication is off in this suite, so the extended card's "audit" is public too.
    expect(card.skills.map((s) => s.id)).toEqual(['echo', 'stream', 'audit']);
    expect(card.defaultOutputModes).toEqual(['text/plain', 'application/json']);
    // The agent list names it by route, described as the downstream describes itself.
    const listed = ((await (await fetch(`${gw.url}/agents`)).json()) as { agents: { name: string; description: string }[] }).agents;
    expect(listed.find((a) => a.name === 'weather')?.description).toContain('scripted A2A agent');
  });

  it('takes what the configuration sets over the downstream\'s, field by field', async () => {
    const configured = await cardAt(`${gw.url}/agents/configured`);
    expect(configured.name).toBe('Configured Desk');
    expect(configured.description).toBe('Set by the operator.');
    expect(configured.skills.map((s) => s.id)).toEqual(['ours']);
    const named = await cardAt(`${gw.url}/agents/named`);
    expect(named.name).toBe('Named Desk');
    expect(named.description).toContain('scripted A2A agent');
    expect(named.skills.map((s) => s.id)).toEqual(['echo', 'stream', 'audit']);
  });

  it('stands in the adapter\'s own fields while the downstream cannot be read, so the card is still served', async () => {
    const card = await cardAt(`${gw.url}/agents/unreachable`);
    expect(card.name).toBe('unreachable');
    expect(card.skills.map((s) => s.id)).toEqual(['remote-agent']);
  });

  it('is still a valid, signed A2A 1.0 card of this gateway: its URLs are the gateway\'s, never the downstream\'s', async () => {
    const card = await cardAt(`${gw.url}/agents/weather`);
    expect(card.supportedInterfaces.length).toBeGreaterThan(0);
    for (const face of card.supportedInterfaces) {
      expect(face.url.startsWith(`${gw.url}/agents/weather/`)).toBe(true);
      expect(face.protocolVersion === '1.0' || face.protocolVersion === '0.3').toBe(true);
    }
    expect(JSON.stringify(card)).not.toContain(downstream.url);
    expect(card.version).toBe('0.1.0');
    // The official SDK reads it as an A2A 1.0 AgentCard and checks its signature against the JWKS.
    const read = SdkAgentCard.fromJSON(card);
    expect(read.name).toBe('downstream test agent');
    const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/jwks.json`));
    await expect(verifyAgentCardSignature(async (kid: string) => jwks({ alg: 'ES256', kid }))(card as unknown as SdkAgentCard)).resolves.not.toThrow();
  });
});
