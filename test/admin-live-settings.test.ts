// What the gateway derived from its agents and issuers at start now follows the admin API while
// it runs: the queues the /admin/queues dashboard shows (and the queue-depth metric reads), and
// the MCP face's protected resource metadata (scopes_supported from the agents' scopes,
// authorization_servers from the trusted issuers).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCall } from './support/admin-client.ts';
import { startTestGateway, type TestGateway } from './support/harness.ts';
import { createTestIssuer } from './support/identity.ts';

describe('settings that follow the admin API', () => {
  let gw: TestGateway;
  let admin: string;

  const dashboardQueues = async (): Promise<string[]> => {
    const response = await fetch(`${gw.url}/admin/queues/api/queues`, { headers: { Authorization: `Bearer ${admin}` } });
    expect(response.status).toBe(200);
    return ((await response.json()) as { queues: { name: string }[] }).queues.map((queue) => queue.name);
  };
  const resourceMetadata = async (): Promise<{ scopes_supported: string[]; authorization_servers: string[] }> =>
    (await (await fetch(`${gw.url}/.well-known/oauth-protected-resource/mcp`)).json()) as { scopes_supported: string[]; authorization_servers: string[] };

  beforeAll(async () => {
    const issuer = await createTestIssuer();
    admin = await issuer.token({ scope: 'a2a:admin a2a:platform', sub: 'root' });
    gw = await startTestGateway({
      name: 'admin-live-settings',
      config: { auth: { enabled: true, issuers: [issuer.config] }, mcp: { enabled: true }, agents: { main: { adapter: 'demo', scopes: ['main:use'] } } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("shows a stored agent's queue on the dashboard while the agent exists", async () => {
    const before = await dashboardQueues();
    expect(before.some((name) => name.includes('main'))).toBe(true);
    expect(before.some((name) => name.includes('helper'))).toBe(false);
    expect((await adminCall(gw.url, 'PUT', '/agents/helper', { token: admin, body: { adapter: 'demo', scopes: ['helper:use'] } })).status).toBe(201);
    expect((await dashboardQueues()).filter((name) => name.includes('helper'))).toHaveLength(1);
    expect((await resourceMetadata()).scopes_supported).toEqual(expect.arrayContaining(['main:use', 'helper:use']));

    expect((await adminCall(gw.url, 'DELETE', '/agents/helper', { token: admin })).status).toBe(204);
    expect((await dashboardQueues()).some((name) => name.includes('helper'))).toBe(false);
    expect((await resourceMetadata()).scopes_supported).not.toContain('helper:use');
    expect((await resourceMetadata()).scopes_supported).toContain('main:use');
  });

  it("names a stored issuer among the MCP face's authorization servers while it is trusted", async () => {
    const issuer = 'https://stored-idp.example';
    expect((await resourceMetadata()).authorization_servers).not.toContain(issuer);
    expect((await adminCall(gw.url, 'PUT', '/issuers/stored-idp', { token: admin, body: { issuer, audience: 'a2a', jwksUri: `${issuer}/jwks` } })).status).toBe(201);
    expect((await resourceMetadata()).authorization_servers).toContain(issuer);
    expect((await adminCall(gw.url, 'DELETE', '/issuers/stored-idp', { token: admin })).status).toBe(204);
    expect((await resourceMetadata()).authorization_servers).not.toContain(issuer);
  });
});
