// Rate limits, quotas and caps per principal, owner, tenant and address (the top-level limits).
import { z } from 'zod';

export const limitsSchema = z.strictObject({
  /** Requests per second each principal may make, shared by all gateways (token bucket in Redis; 0 = no limit). */
  requestsPerSecond: z.coerce.number().min(0).default(50),
  /** Requests a principal may make at once after being idle. */
  burst: z.coerce.number().int().min(1).default(100),
  /** A request costs one more token of its principal's bucket per this many body bytes (0 = one token each): bounds a principal's byte rate too. */
  requestBytesPerToken: z.coerce.number().int().min(0).default(65_536),
  /**
   * Request body bytes per second one owner (principal and agent) may send, shared by all gateways
   * (0 = no limit); past it 429 + Retry-After, refused before the body is read when its size is
   * declared. While on, bodies cost no extra request tokens (requestBytesPerToken charges answers only).
   */
  ingressBytesPerSecond: z.coerce.number().int().min(0).default(524_288),
  /** Request body bytes one owner may send at once after being quiet (a body larger than this passes only with a full bucket). */
  ingressBurstBytes: z.coerce.number().int().min(1024).default(1_048_576),
  /** Bytes of messages per second one owner may have stored, shared by all gateways (0 = no limit); past it 429 + Retry-After and nothing is stored. */
  storedBytesPerSecond: z.coerce.number().int().min(0).default(524_288),
  /** Message bytes one owner may have stored at once after being quiet. */
  storedBurstBytes: z.coerce.number().int().min(1024).default(1_048_576),
  /**
   * Bytes per second of agent output (artifact chunks, status updates) one owner's turns may have
   * stored, shared by every worker (0 = no pacing); past it the turn waits (cancel and the
   * deadline still stop it), so a backend filling its output allowance cannot flood Redis.
   */
  outputBytesPerSecond: z.coerce.number().int().min(0).default(1_048_576),
  /** Agent output bytes one owner's turns may have stored at once after being quiet (a larger chunk passes only with a full bucket). */
  outputBurstBytes: z.coerce.number().int().min(1024).default(8_388_608),
  /**
   * Turns of one owner (an authenticated principal and agent) running at once across every worker
   * (0 = no cap); a worker that picks another defers it for a moment and runs someone else's.
   * Not applied when authentication is off (every caller is the same anonymous owner).
   */
  maxRunningTurnsPerOwner: z.coerce.number().int().min(0).default(8),
  /** Turns of one named tenant's owners (of one agent) running at once across every worker (0 = no cap); the default tenant ("") is not capped as one. */
  maxRunningTurnsPerTenant: z.coerce.number().int().min(0).default(16),
  /** Tasks a principal may have in flight (submitted or working) at once (0 = no cap). */
  maxActiveTasks: z.coerce.number().int().min(0).default(100),
  /** Messages that may wait for one task's running turn to end (input policy enqueue or interrupt; 0 = no bound); past it a follow-up gets 429 RESOURCE_EXHAUSTED, reason INBOX_FULL, and nothing is stored. */
  maxQueuedMessages: z.coerce.number().int().min(0).default(100),
  /**
   * Requests that fail authentication (no, malformed or invalid credentials), per second and
   * client address, shared by all gateways (token bucket in Redis). Past it that address's
   * failing requests get 429 + Retry-After instead of 401, answered without touching Redis
   * (0 = no limit). Requests that authenticate are never counted or refused by it.
   */
  unauthenticatedPerSecond: z.coerce.number().min(0).default(10),
  /** Failed authentications an address may make at once after being quiet. */
  unauthenticatedBurst: z.coerce.number().int().min(1).default(50),
  /** Bytes of task JSON one ListTasks page may carry; past it the page ends early with a nextPageToken (docs/hardening.md). */
  maxListPageBytes: z.coerce.number().int().min(1024).default(1024 * 1024),
  /** Index entries one ListTasks call examines at most; past it (a status filter passing over many tasks) the page ends early with a nextPageToken. */
  maxListScannedEntries: z.coerce.number().int().min(1).default(250),
  /** ListTasks calls one owner may have in progress on one gateway process at once (0 = no cap); past it 429 with Retry-After. */
  maxConcurrentListsPerOwner: z.coerce.number().int().min(0).default(2),
  /**
   * Bytes of messages one owner (principal and agent) may have stored, counted when a message is
   * accepted and released when its task expires (0 = no quota); past it a message is refused with 429.
   */
  maxStoredBytes: z.coerce.number().int().min(0).default(1024 * 1024 * 1024),
  /** Tasks one owner may have stored, open or not yet expired (0 = no quota); past it a new task is refused with 429. */
  maxStoredTasks: z.coerce.number().int().min(0).default(100_000),
  /** Streams (SSE and gRPC) one owner may have open at once across every gateway sharing the Redis (0 = no cap); past it a stream is refused with 429. */
  maxStreamsPerOwner: z.coerce.number().int().min(0).default(100),
  /** Streams all gateways sharing the Redis hold open at once, all owners together (0 = no cap); past it a stream is refused with 503. */
  maxStreams: z.coerce.number().int().min(0).default(10_000),
  /**
   * How long an open stream's slot stays counted in Redis without its gateway renewing it (ms); each
   * gateway renews its streams' slots every third of it, so a gateway that dies frees its slots within this.
   */
  streamSlotTtlMs: z.coerce.number().int().min(1_000).default(30_000),
  /**
   * Bytes one artifact may grow to through a turn's chunks (each chunk counted as the event that
   * carries it; a replacing chunk starts the count afresh). Past it the chunk is not stored and the
   * turn fails, naming this setting; the adapter's next write is refused, so it stops reading its backend.
   */
  maxArtifactBytes: z.coerce.number().int().min(1024).default(16 * 1024 * 1024),
  /** Bytes of events (status updates, artifact chunks) one turn may store; past it the turn fails, naming this setting. */
  maxTurnOutputBytes: z.coerce.number().int().min(1024).default(32 * 1024 * 1024),
  /** Bytes of events all turns of one task may store together; past it the turn fails, naming this setting. */
  maxTaskOutputBytes: z.coerce.number().int().min(1024).default(64 * 1024 * 1024),
});
