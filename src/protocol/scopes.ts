/**
 * What a token or a partner may do; docs/security.md maps them to operations and surfaces.
 * Depth within the caller's tenant: a2a:read, a2a:write, a2a:push; a2a:operator (the operator
 * views, read-only); a2a:admin (all of those, and the operators' actions). Breadth: a2a:platform
 * (the operator views across every tenant, and the platform-wide surfaces, Bull Board and
 * /metrics). a2a:metrics reads /metrics and nothing else. src/auth/scopes.ts says which implies which.
 */
export const SCOPES = ['a2a:read', 'a2a:write', 'a2a:push', 'a2a:operator', 'a2a:admin', 'a2a:metrics', 'a2a:platform'] as const;
export type Scope = (typeof SCOPES)[number];
