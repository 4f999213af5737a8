// Which scopes each admin surface of the gateway's port needs.
import type { Principal } from '../auth/principal.ts';
import { requireScope } from '../auth/scopes.ts';

/** The platform-wide surfaces: Prometheus metrics and the queue dashboard. */
export type AdminSurface = 'metrics' | 'queue dashboard';

/** Throws PERMISSION_DENIED naming what the caller lacks for `method` on `surface`. */
export function authorizeAdminSurface(principal: Principal, surface: AdminSurface, method: string, operation: string): void {
  void surface;
  void method;
  requireScope(principal, operation, 'a2a:admin');
}
