// The MCP face's settings from the gateway's configuration: its own section, and the token
// issuers the gateway trusts, which its protected resource metadata names, and the store where
// calls in progress are found for cancellation.
import type { DevIssuer } from '../auth/dev-issuer.ts';
import type { GatewayConfig, IssuerConfig } from '../config/schema.ts';
import type { RedisClient } from '../redis/connection.ts';
import { McpCallStore } from '../store/mcp/mcp-call-store.ts';
import type { McpFaceSettings } from './mcp-routes.ts';

/** `trusted`: the issuers trusted now (the JWT verifier's, issuers written through the admin API included), read at each request. */
export function mcpFaceSettingsOf(config: GatewayConfig, devIssuer: DevIssuer | undefined, redis: RedisClient, trusted?: () => readonly IssuerConfig[]): McpFaceSettings {
  const issuers = !config.auth.enabled ? [] : devIssuer === undefined ? config.auth.issuers.map((issuer) => issuer.issuer) : [devIssuer.issuer];
  return {
    settings: config.mcp,
    authorizationServers: () => (config.auth.enabled && trusted !== undefined ? trusted().map((issuer) => issuer.issuer) : issuers),
    taskTtlMs: config.retentionSeconds * 1000,
    heartbeatMs: config.heartbeatMs,
    calls: new McpCallStore(redis, config.keyPrefix),
  };
}
