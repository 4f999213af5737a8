import type { Owner } from '../store/task-store.ts';

/**
 * Who is calling. Until authentication is configured every caller is the same anonymous
 * principal of the request's tenant, so tasks are still scoped per tenant.
 */
export function resolveOwner(tenant: string | undefined): Owner {
  return { tenant: tenant ?? '', subject: 'anonymous' };
}
