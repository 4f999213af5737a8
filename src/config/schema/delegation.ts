// Sub-agent coordination settings: roles and how many assignments run at once.
import { z } from 'zod';
import { callerIdentitySchema } from './caller-identity.ts';

/** A sub-agent role: which adapter runs its assignments, and how many of one coordinator's run at once. */
const roleSchema = z.strictObject({
  /** "demo", "openai", "a2a" (a remote A2A agent) or a path to an adapter module (like the top-level adapter setting). */
  adapter: z.string().min(1).default('demo'),
  /** Options handed to its adapter factory. */
  adapterOptions: z.record(z.string(), z.json()).default({}),
  /** At most this many of one coordinator's assignments of this role run at once (default: only the coordinator's limit). */
  maxParallel: z.coerce.number().int().min(1).max(64).optional(),
  /** Tell this role's backend who is calling (and which coordinators delegated), like an agent's callerIdentity. */
  callerIdentity: callerIdentitySchema.default(callerIdentitySchema.parse({})),
});
export type RoleConfig = z.infer<typeof roleSchema>;

export const delegationSchema = z.strictObject({
  /** Assignments of one coordinator that run at once, across all workers; the rest wait in FIFO order. */
  maxParallel: z.coerce.number().int().min(1).max(64).default(4),
  /** Roles by name; a role not listed here runs on the demo adapter. */
  roles: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/), roleSchema).default({}),
});
