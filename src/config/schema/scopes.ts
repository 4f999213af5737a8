// The scopes credentials may grant (SCOPES, src/protocol/scopes.ts, and scopes of an agent's
// own) and the check that refuses a misspelt one.
import { z } from 'zod';
import { SCOPES } from '../../protocol/scopes.ts';

/**
 * A scope credentials may grant: one of SCOPES (which decide the operations), or any other
 * scope an agent may require (agents.<name>.scopes). A misspelt "a2a:" scope is refused.
 */
export const isGrantableScope = (value: string): boolean =>
  /^[\x21-\x7e]{1,128}$/.test(value) && (!value.startsWith('a2a:') || (SCOPES as readonly string[]).includes(value));
export const scope = z.string().refine(isGrantableScope, { message: `a scope is one of ${SCOPES.join(', ')} or a scope of your own (1 to 128 printable characters, not starting with "a2a:")` });
