// Scope checks. Which scope each operation needs is declared with the operation
// (src/operations/registry.ts); which scopes each admin surface needs, with the surface.
// Scopes give depth (what a caller may do within its tenant) or breadth (a2a:platform: every
// tenant, and the platform-wide surfaces); neither implies the other, so a tenant's admin never
// sees another tenant and a metrics scraper can do nothing but read metrics.
import { SCOPES, type Scope } from '../protocol/scopes.ts';
import { A2AError } from '../protocol/errors.ts';
import { bearerChallenge } from './jwt/challenge.ts';
import type { Principal } from './principal.ts';

/** What holding a scope grants besides itself (one level: nothing implies a scope that implies more). */
export const IMPLIED_SCOPES: Readonly<Record<Scope, readonly Scope[]>> = {
  'a2a:read': [],
  'a2a:write': [],
  'a2a:push': [],
  'a2a:operator': [],
  'a2a:admin': ['a2a:read', 'a2a:write', 'a2a:push', 'a2a:operator'],
  'a2a:metrics': [],
  'a2a:platform': ['a2a:metrics'],
};

export function hasScope(principal: Principal, scope: Scope): boolean {
  if (principal.scopes.has(scope)) return true;
  for (const held of principal.scopes) if (IMPLIED_SCOPES[held].includes(scope)) return true;
  return false;
}

/**
 * Whether the caller's operator views span every tenant: with a2a:platform, or with
 * authentication off (undefined: the anonymous caller holds every scope).
 */
export function spansEveryTenant(principal: Principal | undefined): boolean {
  return principal === undefined || hasScope(principal, 'a2a:platform');
}

/**
 * Throws PERMISSION_DENIED naming every scope of `scopes` the caller lacks (for a surface that
 * needs depth and breadth both), like requireScope does for one.
 */
export function requireScopes(principal: Principal, operation: string, scopes: readonly Scope[]): void {
  const missing = scopes.filter((scope) => !hasScope(principal, scope));
  if (missing.length === 0) return;
  const named = missing.map((scope) => `"${scope}"`).join(' and ');
  const message = `${operation} needs the scope${missing.length > 1 ? 's' : ''} ${named}, which these credentials do not grant.`;
  throw new A2AError('PERMISSION_DENIED', message, {
    metadata: { reason: 'SCOPE_MISSING', requiredScope: missing.join(' '), operation },
    headers: principal.method === 'jwt' ? { 'WWW-Authenticate': bearerChallenge({ error: 'insufficient_scope', description: message, scope: missing.join(' ') }) } : {},
  });
}

/**
 * Throws PERMISSION_DENIED naming the missing scope (never anything about the resource). An
 * operation without a known scope is refused, never let through.
 */
export function requireScope(principal: Principal, operation: string, scope: Scope | undefined): void {
  if (scope === undefined || !(SCOPES as readonly string[]).includes(scope)) {
    throw new A2AError('PERMISSION_DENIED', `${operation} declares no known scope, so nobody may call it.`, {
      metadata: { reason: 'SCOPE_UNDECLARED', operation },
    });
  }
  requireScopes(principal, operation, [scope]);
}

/**
 * The tenant an operation acts in: the one the request names, which must be the caller's.
 * A request that names none acts in the caller's own tenant.
 */
export function requireTenant(principal: Principal, requested: string | undefined): string {
  if (requested === undefined || requested === principal.tenant) return principal.tenant;
  throw new A2AError(
    'PERMISSION_DENIED',
    `These credentials belong to ${principal.tenant === '' ? 'the default tenant' : `tenant "${principal.tenant}"`}, not to tenant "${requested}".`,
    { metadata: { reason: 'TENANT_MISMATCH' } },
  );
}

/**
 * An agent configured with scopes is only for callers holding one of them. Operators
 * (a2a:operator, which a2a:admin implies) always pass this gate: their views span agents, and
 * it grants no operation by itself (each still needs its own scope). Refused like a missing
 * operation scope, naming what would let the caller in.
 */
export function requireAgentAccess(principal: Principal, agent: string, scopes: readonly string[]): void {
  if (mayUseAgent(principal, scopes)) return;
  const message = `Agent "${agent}" needs one of the scopes ${scopes.map((s) => `"${s}"`).join(', ')}, which these credentials do not grant.`;
  throw new A2AError('PERMISSION_DENIED', message, {
    metadata: { reason: 'AGENT_SCOPE_MISSING', agent, requiredScope: scopes.join(' ') },
    headers: principal.method === 'jwt' ? { 'WWW-Authenticate': bearerChallenge({ error: 'insufficient_scope', description: message, scope: scopes.join(' ') }) } : {},
  });
}

/** Whether a caller may use an agent at all (GET /agents lists only those). */
export function mayUseAgent(principal: Principal, scopes: readonly string[]): boolean {
  return scopes.length === 0 || hasScope(principal, 'a2a:operator') || scopes.some((scope) => principal.grants.has(scope));
}
