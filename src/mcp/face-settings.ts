// The MCP face's settings from the gateway's configuration: its own section, and the token
// issuers the gateway trusts, which its protected resource metadata names.
import type { DevIssuer } from '../auth/dev-issuer.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { McpFaceSettings } from './mcp-routes.ts';

export function mcpFaceSettingsOf(config: GatewayConfig, devIssuer: DevIssuer | undefined): McpFaceSettings {
  const issuers = !config.auth.enabled ? [] : devIssuer === undefined ? config.auth.issuers.map((issuer) => issuer.issuer) : [devIssuer.issuer];
  return { settings: config.mcp, authorizationServers: issuers, taskTtlMs: config.retentionSeconds * 1000, heartbeatMs: config.heartbeatMs };
}
