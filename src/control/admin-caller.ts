// Who is changing the control plane, and how far their reach goes. Every admin call needs
// a2a:admin (depth); a2a:platform (breadth) reaches every tenant and the platform's own
// resources (issuers, agents). Without it, an admin sees and changes only its tenant's API keys and
// partners, and grants no scope it does not hold itself, so a tenant admin can never mint a
// credential stronger than its own.
import { hasScope } from '../auth/scopes.ts';
import { anonymousPrincipal, type Principal } from '../auth/principal.ts';
import { SCOPES, type Scope } from '../protocol/scopes.ts';
import { A2AError } from '../protocol/errors.ts';
import { isPlatformKind, type ResourceKind } from './resource-kinds.ts';

export interface AdminCaller {
  principal: Principal;
  /** Holds a2a:platform (or authentication is off). */
  platform: boolean;
  /** Named in the audit: the principal's subject, with its tenant. */
  actor: string;
}

export function adminCallerOf(principal: Principal | undefined): AdminCaller {
  const caller = principal ?? anonymousPrincipal(undefined);
  return {
    principal: caller,
    platform: principal === undefined || hasScope(caller, 'a2a:platform'),
    actor: caller.tenant === '' ? caller.subject : `${caller.subject} (tenant ${caller.tenant})`,
  };
}

/** Whether `caller` may see a resource of `kind` in `tenant` (undefined: the platform's). */
export function mayReach(caller: AdminCaller, kind: ResourceKind, tenant: string | undefined): boolean {
  if (caller.platform) return true;
  return !isPlatformKind(kind) && tenant !== undefined && tenant === caller.principal.tenant;
}

/** Issuers and agents are the platform's: a tenant admin is refused them outright, naming the scope. */
export function requireKindAccess(caller: AdminCaller, kind: ResourceKind): void {
  if (mayReach(caller, kind, caller.principal.tenant)) return;
  throw new A2AError('PERMISSION_DENIED', `The ${kind} are the whole platform's: managing them needs the scope "a2a:platform", which these credentials do not grant.`, {
    metadata: { reason: 'SCOPE_MISSING', requiredScope: 'a2a:platform' },
  });
}

/** Refuses a write that would put a resource in another tenant, or grant a scope the caller lacks. */
export function requireGrantable(caller: AdminCaller, tenant: string | undefined, scopes: readonly string[]): void {
  if (caller.platform) return;
  if (tenant !== caller.principal.tenant) {
    throw new A2AError('PERMISSION_DENIED', `These credentials manage tenant "${caller.principal.tenant}" only, not tenant "${tenant ?? ''}".`, {
      metadata: { reason: 'TENANT_MISMATCH' },
      violations: [{ field: 'tenant', description: `must be "${caller.principal.tenant}" (your tenant)` }],
    });
  }
  const lacking = scopes.filter((granted) => ((SCOPES as readonly string[]).includes(granted) ? !hasScope(caller.principal, granted as Scope) : !caller.principal.grants.has(granted)));
  if (lacking.length > 0) {
    throw new A2AError('PERMISSION_DENIED', `A tenant admin grants only scopes it holds itself; these credentials do not hold ${lacking.map((s) => `"${s}"`).join(', ')}.`, {
      metadata: { reason: 'SCOPE_NOT_GRANTABLE' },
      violations: [{ field: 'scopes', description: `may not include ${lacking.join(', ')}` }],
    });
  }
}
