// The scopes credentials grant and the check that refuses a misspelt one.
import { z } from 'zod';

/**
 * What a token or a partner may do; docs/security.md maps them to operations and surfaces.
 * Depth within the caller's tenant: a2a:read, a2a:write, a2a:push; a2a:operator (the operator
 * views, read-only); a2a:admin (all of those, and the operators' actions). Breadth: a2a:platform
 * (the operator views across every tenant, and the platform-wide surfaces, Bull Board and
 * /metrics). a2a:metrics reads /metrics and nothing else. src/auth/scopes.ts says which implies which.
 */
export const SCOPES = ['a2a:read', 'a2a:write', 'a2a:push', 'a2a:operator', 'a2a:admin', 'a2a:metrics', 'a2a:platform'] as const;
export type Scope = (typeof SCOPES)[number];
/**
 * A scope credentials may grant: one of SCOPES (which decide the operations), or any other
 * scope an agent may require (agents.<name>.scopes). A misspelt "a2a:" scope is refused.
 */
export const isGrantableScope = (value: string): boolean =>
  /^[\x21-\x7e]{1,128}$/.test(value) && (!value.startsWith('a2a:') || (SCOPES as readonly string[]).includes(value));
export const scope = z.string().refine(isGrantableScope, { message: `a scope is one of ${SCOPES.join(', ')} or a scope of your own (1 to 128 printable characters, not starting with "a2a:")` });
