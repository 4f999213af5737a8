// MCP authorization (the 2025-06-18 authorization spec): /mcp is an OAuth protected resource.
// Its metadata (RFC 9728) names the token issuers the gateway trusts as its authorization
// servers, and every 401 of /mcp points at that metadata from its WWW-Authenticate challenge,
// so an MCP client can find where to get a token. The tokens are the A2A bindings' own: the
// one authenticator of the gateway's pipeline checks them.
import { A2AError } from '../protocol/errors.ts';
import { SCOPES } from '../protocol/scopes.ts';

export const MCP_PATH = '/mcp';
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

export interface ProtectedResource {
  /** The resource's URL (`<publicUrl>/mcp`): what tokens are for. */
  resource: string;
  /** Where its metadata is (`<publicUrl>/.well-known/oauth-protected-resource/mcp`, RFC 9728 §3.1). */
  metadataUrl: string;
  /** The issuers of the tokens the gateway accepts. */
  authorizationServers: readonly string[];
  /** Scopes worth asking for: the operations' and every agent's. */
  scopes: readonly string[];
}

export function protectedResourceOf(publicUrl: string, authorizationServers: readonly string[], agentScopes: readonly string[]): ProtectedResource {
  const base = publicUrl.replace(/\/+$/, '');
  return {
    resource: `${base}${MCP_PATH}`,
    metadataUrl: `${base}${RESOURCE_METADATA_PATH}${MCP_PATH}`,
    authorizationServers,
    scopes: [...new Set<string>([...SCOPES.filter((scope) => scope === 'a2a:read' || scope === 'a2a:write'), ...agentScopes])],
  };
}

/** The RFC 9728 metadata document. */
export function resourceMetadataOf(resource: ProtectedResource): Record<string, unknown> {
  return {
    resource: resource.resource,
    authorization_servers: resource.authorizationServers,
    scopes_supported: resource.scopes,
    bearer_methods_supported: ['header'],
    resource_name: 'a2a-gateway MCP server',
  };
}

/**
 * A refusal of credentials (401) with the resource metadata in its Bearer challenge (RFC 9728
 * §5.1); any other error unchanged.
 */
export function withResourceMetadata(error: unknown, resource: ProtectedResource): unknown {
  if (!(error instanceof A2AError) || error.kind !== 'UNAUTHENTICATED') return error;
  const parameter = `resource_metadata="${resource.metadataUrl}"`;
  const challenge = error.extraHeaders['WWW-Authenticate'];
  let header: string;
  if (challenge === undefined) header = `Bearer ${parameter}`;
  else if (/^Bearer\b|,\s*Bearer\b/.test(challenge)) header = challenge.replace(/Bearer( [^,]*)?/, (bearer, rest: string | undefined) => (rest === undefined ? `Bearer ${parameter}` : `${bearer}, ${parameter}`));
  else header = `Bearer ${parameter}, ${challenge}`;
  return new A2AError(error.kind, error.message, {
    metadata: error.metadata,
    violations: error.violations,
    ...(error.httpStatus === undefined ? {} : { httpStatus: error.httpStatus }),
    ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
    headers: { ...error.extraHeaders, 'WWW-Authenticate': header },
    cause: error,
  });
}
