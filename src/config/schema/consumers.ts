// Consumers (docs/consumers.md): who each is and its plan. Defined here, in the configuration file
// (consumers.<id>), and through the admin API (/admin/v1/consumers), with this one schema.
import { z } from 'zod';
import { shortName } from './values.ts';

/** Most JWT subjects one consumer names: every process holds all of them in memory. */
export const MAX_CONSUMER_SUBJECTS = 1_000;

/**
 * A plan's limits. Each one left out falls back to the gateway's default (see effectivePlan);
 * 0 means no limit, as for the gateway's own limits.
 */
export const consumerPlanSchema = z.strictObject({
  /** How refusals name the plan (default: the consumer's id). */
  name: shortName.optional(),
  /** Requests per second of all the consumer's callers together, on every gateway (default limits.requestsPerSecond). */
  requestsPerSecond: z.number().min(0).max(1_000_000).optional(),
  /** Requests the consumer may make at once after being idle (default limits.burst). */
  burst: z.number().int().min(1).max(1_000_000).optional(),
  /** New tasks of the consumer queued or running at once (default limits.maxActiveTasks). */
  concurrentTasks: z.number().int().min(0).max(1_000_000).optional(),
  /** New tasks per UTC day (default: no limit). */
  tasksPerDay: z.number().int().min(0).max(1_000_000_000).optional(),
  /** Model tokens (input and output) per UTC day (default: no limit). */
  modelTokensPerDay: z.number().int().min(0).max(1e15).optional(),
  /** Spend per UTC calendar month, in the currency of the agents' prices (default: no limit). */
  spendPerMonth: z.number().min(0).max(1e12).optional(),
});
export type ConsumerPlan = z.infer<typeof consumerPlanSchema>;

/** Who a consumer is. API keys join one by naming it (their `consumer` field), not here. */
export const consumerMembersSchema = z
  .strictObject({
    /** Every caller of this tenant not claimed by a consumer more specifically (its subjects, its API key). */
    tenant: z.string().max(128).optional(),
    /** The issuer (auth.issuers id) whose `subjects` these are. */
    issuer: shortName.optional(),
    /** JWT `sub` values of `issuer`'s tokens. */
    subjects: z.array(z.string().min(1).max(256)).max(MAX_CONSUMER_SUBJECTS).optional(),
  })
  .refine((members) => (members.issuer === undefined) === (members.subjects === undefined), {
    message: 'issuer and subjects go together: name the issuer whose subjects these are',
    path: ['subjects'],
  });

export const consumerInput = z.strictObject({
  /** What the consumer is, for people reading the list. */
  description: z.string().max(500).optional(),
  /** Who the consumer is: a tenant's callers, or JWT subjects of an issuer (API keys join by their own `consumer` field). */
  members: consumerMembersSchema.default({}),
  /** The limits shared by all its callers; each one left out falls back to the gateway's default (0 = no limit). */
  plan: consumerPlanSchema.default({}),
});
export type ConsumerSpec = z.infer<typeof consumerInput>;

