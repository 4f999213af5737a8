// Which scope each A2A operation needs. a2a:admin implies the other three.
import type { Scope } from '../config/schema.ts';
import { A2AError } from '../protocol/errors.ts';
import { bearerChallenge } from './jwt/challenge.ts';
import type { Principal } from './principal.ts';

export const OPERATION_SCOPES: Record<string, Scope> = {
  GetTask: 'a2a:read',
  ListTasks: 'a2a:read',
  SubscribeToTask: 'a2a:read',
  GetExtendedAgentCard: 'a2a:read',
  ListTaskAssignments: 'a2a:read',
  SendMessage: 'a2a:write',
  SendStreamingMessage: 'a2a:write',
  CancelTask: 'a2a:write',
  CreateTaskPushNotificationConfig: 'a2a:push',
  GetTaskPushNotificationConfig: 'a2a:push',
  ListTaskPushNotificationConfigs: 'a2a:push',
  DeleteTaskPushNotificationConfig: 'a2a:push',
  // Gateway extension: operators' view of push deliveries that were given up on.
  ListPushDeadLetters: 'a2a:admin',
  ReplayPushDeadLetter: 'a2a:admin',
  // Gateway extension: schedules (a firing's task belongs to the schedule's owner).
  CreateSchedule: 'a2a:write',
  PauseSchedule: 'a2a:write',
  ResumeSchedule: 'a2a:write',
  DeleteSchedule: 'a2a:write',
  GetSchedule: 'a2a:read',
  ListSchedules: 'a2a:read',
};

export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes.has(scope) || principal.scopes.has('a2a:admin');
}

/** Throws PERMISSION_DENIED naming the missing scope (never anything about the resource). */
export function requireScope(principal: Principal, operation: string): void {
  const scope = OPERATION_SCOPES[operation];
  if (scope === undefined || hasScope(principal, scope)) return;
  const message = `${operation} needs the scope "${scope}", which these credentials do not grant.`;
  throw new A2AError('PERMISSION_DENIED', message, {
    metadata: { reason: 'SCOPE_MISSING', requiredScope: scope, operation },
    // RFC 6750 §3.1: tell a bearer client which scope to ask its issuer for.
    headers: principal.method === 'jwt' ? { 'WWW-Authenticate': bearerChallenge({ error: 'insufficient_scope', description: message, scope }) } : {},
  });
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
 * An agent configured with scopes is only for callers holding one of them (a2a:admin always
 * may). Refused like a missing operation scope, naming what would let the caller in.
 */
export function requireAgentAccess(principal: Principal, agent: string, scopes: readonly string[]): void {
  if (scopes.length === 0 || principal.scopes.has('a2a:admin') || scopes.some((scope) => principal.grants.has(scope))) return;
  const message = `Agent "${agent}" needs one of the scopes ${scopes.map((s) => `"${s}"`).join(', ')}, which these credentials do not grant.`;
  throw new A2AError('PERMISSION_DENIED', message, {
    metadata: { reason: 'AGENT_SCOPE_MISSING', agent, requiredScope: scopes.join(' ') },
    headers: principal.method === 'jwt' ? { 'WWW-Authenticate': bearerChallenge({ error: 'insufficient_scope', description: message, scope: scopes.join(' ') }) } : {},
  });
}

/** Whether a caller may use an agent at all (GET /agents lists only those). */
export function mayUseAgent(principal: Principal, scopes: readonly string[]): boolean {
  return scopes.length === 0 || principal.scopes.has('a2a:admin') || scopes.some((scope) => principal.grants.has(scope));
}
