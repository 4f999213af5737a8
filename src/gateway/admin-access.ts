// Which scopes each admin surface of the gateway's port needs. Both show every tenant's data
// (the queues and the metrics are the deployment's, not a tenant's), so both need breadth:
// a2a:platform. The dashboard also needs depth: a2a:operator to look (GET, HEAD), a2a:admin to
// act (pause, resume, retry, clean, add: every other method). /metrics is read-only: a
// scraper's a2a:metrics is enough, and a2a:platform implies it.
import type { Principal } from '../auth/principal.ts';
import { requireScopes } from '../auth/scopes.ts';
import type { Scope } from '../protocol/scopes.ts';

/** The platform-wide surfaces: Prometheus metrics and the queue dashboard. */
export type AdminSurface = 'metrics' | 'queue dashboard';

const READS = new Set(['GET', 'HEAD']);

/** The scopes `method` on `surface` needs, all of them. */
export function adminSurfaceScopes(surface: AdminSurface, method: string): readonly Scope[] {
  if (surface === 'metrics') return ['a2a:metrics'];
  return READS.has(method.toUpperCase()) ? ['a2a:operator', 'a2a:platform'] : ['a2a:admin', 'a2a:platform'];
}

/** Throws PERMISSION_DENIED naming what the caller lacks for `method` on `surface`. */
export function authorizeAdminSurface(principal: Principal, surface: AdminSurface, method: string, operation: string): void {
  requireScopes(principal, operation, adminSurfaceScopes(surface, method));
}
