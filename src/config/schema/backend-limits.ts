// What a backend may make a worker read, and the defaults adapters built outside a gateway use.
import { z } from 'zod';
import { positiveMs } from './values.ts';

/**
 * What one backend (a remote A2A agent, a model server, an adapter's own HTTP calls through
 * the bounded fetch) may make a worker read: checked while the bytes arrive, so a hostile or
 * broken backend costs at most these, and the turn fails with a reason naming the bound.
 */
export const backendLimitsSchema = z.strictObject({
  /** Bytes of one answer that is not a stream (a JSON body); a larger declared Content-Length is refused before reading. */
  maxResponseBytes: z.coerce.number().int().min(1024).default(16 * 1024 * 1024),
  /** Bytes of one event of a stream (an SSE event: one model delta, one A2A update). */
  maxEventBytes: z.coerce.number().int().min(1024).default(4 * 1024 * 1024),
  /** Bytes of one stream in all, however many events it has. */
  maxStreamBytes: z.coerce.number().int().min(1024).default(64 * 1024 * 1024),
  /** How long the body of an answer that is not a stream may take to arrive once its headers have. */
  bodyTimeoutMs: positiveMs.default(60_000),
  /** Longest silence (no byte) within a stream; past it the stream is cut, and the adapter decides whether to resume. */
  streamIdleTimeoutMs: positiveMs.default(300_000),
});
export type BackendLimitsConfig = z.infer<typeof backendLimitsSchema>;
/** Every backend bound at its default (an adapter built outside a configured gateway: tests, tools). */
export const DEFAULT_BACKEND_LIMITS: BackendLimitsConfig = backendLimitsSchema.parse({});
