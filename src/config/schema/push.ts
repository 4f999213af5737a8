// Push notification settings: receivers, timeouts, retries, breaker, dead letters, signing keys.
import { z } from 'zod';
import { ReceiverPolicy } from '../../push/receiver-policy.ts';
import { booleanish, stringList } from './values.ts';

/** Push notifications (spec 4.3.3): durable, ordered, signed webhook deliveries. */
export const pushSchema = z.strictObject({
  /** Offer push notifications (capabilities.pushNotifications); false answers the four methods with PushNotificationNotSupportedError. */
  enabled: booleanish.default(true),
  /**
   * Receivers webhooks may reach although their address is loopback, private, link-local, CGNAT,
   * multicast or unique-local: host names (exact), IP addresses or CIDR blocks, e.g. 127.0.0.1 for a receiver on this machine.
   */
  allowedHosts: stringList.default([]).superRefine((entries, ctx) => {
    const problem = ReceiverPolicy.validateAllowList(entries);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  }),
  /** One webhook request's timeout (connect, headers and body). */
  timeoutMs: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** Configs one task may have. */
  maxConfigsPerTask: z.coerce.number().int().min(1).max(1_000).default(32),
  /** Subscriptions (webhooks for all of an owner's new tasks, or one context's) one owner may have with one agent. */
  maxSubscriptionsPerOwner: z.coerce.number().int().min(1).max(1_000).default(20),
  /** Longest webhook URL accepted. */
  maxUrlLength: z.coerce.number().int().min(64).max(16_384).default(2_048),
  /** Deliveries one worker process sends at once. */
  concurrency: z.coerce.number().int().min(1).max(1_000).default(32),
  /** First retry delay; each next one doubles (with full jitter) up to maxDelayMs. */
  retryInitialDelayMs: z.coerce.number().int().min(10).default(1_000),
  /** Longest wait between two tries of one delivery (a receiver's Retry-After may ask for longer, up to the horizon). */
  retryMaxDelayMs: z.coerce.number().int().min(10).default(600_000),
  /** How long one delivery is retried, from its first try, before it is dead-lettered. */
  retryHorizonMs: z.coerce.number().int().min(100).default(86_400_000),
  /** Consecutive failures of one receiver (origin) that open its circuit: nothing is sent to it for breakerCooldownMs, then one probe. */
  breakerFailureThreshold: z.coerce.number().int().min(1).default(5),
  /** How long an open circuit sends nothing to its receiver before one probe. */
  breakerCooldownMs: z.coerce.number().int().min(10).default(30_000),
  /** How often workers sweep the outbox for events the fast path (pub/sub) missed and deliveries whose job was lost (spacing out to 30 s while it is empty). */
  sweepIntervalMs: z.coerce.number().int().min(50).default(2_000),
  /** Dead letters kept per push shard (16 shards); the oldest go first. */
  maxDeadLetters: z.coerce.number().int().min(1).default(10_000),
  /** Private Ed25519 JWK signing deliveries (Standard Webhooks v1a); default: generated in dataDir. Give every worker the same file. */
  signingKeyFile: z.string().min(1).optional(),
  /**
   * Private Ed25519 JWK files of keys that signed deliveries before a rotation. For
   * signingKeyOverlapSeconds after the current key first signed, each signs every delivery
   * beside it (one more `v1a` signature in webhook-signature), so a receiver holding only the old
   * key and one holding only the new key both verify; after that they sign nothing. Their public
   * keys stay on /.well-known/jwks.json while they are listed.
   */
  signingPreviousKeyFiles: stringList.default([]),
  /** How long a rotation's previous keys keep signing beside the current one, from the moment the current key first signed (recorded in Redis). */
  signingKeyOverlapSeconds: z.coerce.number().int().min(0).max(90 * 86_400).default(86_400),
});
