import { SCOPES, type Scope } from '../protocol/scopes.ts';
import type { Owner } from '../store/task-store.ts';

/** How the caller proved who it is. */
export type AuthMethod = 'jwt' | 'signature' | 'api-key' | 'none';

/** An authenticated caller: whose tasks it sees, in which tenant, and what it may do. */
export interface Principal {
  /** The tenant the credentials belong to ("" = the default tenant). */
  tenant: string;
  /** Owner id of the tasks it creates: `user:<issuer id>:<sub>`, `partner:<id>`, `key:<owner>` (an API key's) or `anonymous`. */
  subject: string;
  /** The scopes that decide which operations it may call. */
  scopes: ReadonlySet<Scope>;
  /** Every scope the credentials grant, including scopes of the deployment's own (agent access). */
  grants: ReadonlySet<string>;
  method: AuthMethod;
}

/** The owner of what the principal does with one agent. */
export function ownerOf(principal: Principal, agent: string): Owner {
  return { agent, tenant: principal.tenant, subject: principal.subject };
}

/**
 * The caller when authentication is off: every request is the same anonymous principal of
 * the tenant it names, with every scope, so tasks are still scoped per tenant.
 */
const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES);

export function anonymousPrincipal(tenant: string | undefined): Principal {
  return { tenant: tenant ?? '', subject: 'anonymous', scopes: ALL_SCOPES, grants: ALL_SCOPES, method: 'none' };
}

export const userSubject = (issuerId: string, sub: string): string => `user:${issuerId}:${sub}`;
export const partnerSubject = (partnerId: string): string => `partner:${partnerId}`;

/** The operation scopes among what credentials grant (a2a:read …); others only gate agents. */
export function operationScopes(grants: Iterable<string>): Set<Scope> {
  return new Set([...grants].filter((s): s is Scope => (SCOPES as readonly string[]).includes(s)));
}
