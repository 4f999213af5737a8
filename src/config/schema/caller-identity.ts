// Per backend (an agent, or a sub-agent role): whether the gateway tells it who is calling, in a
// short-lived JWT it signs (docs/security.md, "Caller identity to backends").
import { z } from 'zod';
import { booleanish } from './values.ts';

/** Headers the adapters set themselves (or the platform does): the caller token may not take their place. */
const RESERVED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'host',
  'content-type',
  'content-length',
  'transfer-encoding',
  'connection',
  'accept',
  'a2a-version',
  'a2a-extensions',
  'x-a2a-extensions',
  'traceparent',
  'tracestate',
  'signature',
  'signature-input',
  'content-digest',
]);

export const callerIdentitySchema = z.strictObject({
  /** Attach the caller JWT to every call this backend's adapter makes to the backend's configured origin. */
  enabled: booleanish.default(false),
  /** The request header that carries it. */
  header: z
    .string()
    .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/, 'must be an HTTP header name (letters, digits and -, 1 to 64 characters)')
    .refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), 'names a header the adapter or the platform sets itself; pick another (default X-A2A-Caller)')
    .default('X-A2A-Caller'),
  /** Seconds a token is valid (its exp); each request gets a fresh one, so keep it short. */
  lifetimeSeconds: z.coerce.number().int().min(5).max(3600).default(60),
});
export type CallerIdentitySettings = z.infer<typeof callerIdentitySchema>;
