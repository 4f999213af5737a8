import { z } from 'zod';
import { ReceiverPolicy } from '../push/receiver-policy.ts';
import { SCOPES } from '../protocol/scopes.ts';

const port = z.coerce.number().int().min(0).max(65535);
const positiveMs = z.coerce.number().int().min(1);
const booleanish = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1');
const name = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, "_", "." and "-" only, 1 to 64 characters');

/**
 * A scope credentials may grant: one of SCOPES (which decide the operations), or any other
 * scope an agent may require (agents.<name>.scopes). A misspelt "a2a:" scope is refused.
 */
export const isGrantableScope = (value: string): boolean =>
  /^[\x21-\x7e]{1,128}$/.test(value) && (!value.startsWith('a2a:') || (SCOPES as readonly string[]).includes(value));
const scope = z.string().refine(isGrantableScope, { message: `a scope is one of ${SCOPES.join(', ')} or a scope of your own (1 to 128 printable characters, not starting with "a2a:")` });

/** A JSON Web Key as configured (public keys only; validated again when imported). */
const jwk = z.looseObject({ kty: z.string().min(1) });

export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

/** A trusted token issuer. Exactly one of jwksUri, jwks and jwksFile names its keys. */
const issuerSchema = z
  .strictObject({
    /** Short name: part of every owner id this issuer's tokens create (so equal subjects of two issuers never share tasks). */
    id: name,
    /** The exact `iss` claim. */
    issuer: z.string().min(1),
    /** Accepted `aud` values: a token must carry one of them. */
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    /** Remote JWKS, cached and refetched when a token names an unknown `kid` (key rotation). */
    jwksUri: z.string().url().optional(),
    /** Inline JWKS. */
    jwks: z
      .object({
        /** Public JWKs. */
        keys: z.array(jwk).min(1),
      })
      .optional(),
    /** JWKS file (relative to the config file). */
    jwksFile: z.string().min(1).optional(),
    /** Allowed `alg` values; anything else (`none`, HS256 …) is refused before any key is used. */
    algorithms: z.array(z.enum(JWT_ALGORITHMS)).min(1).default(['RS256', 'ES256', 'EdDSA']),
    /** Claims every token must carry besides iss, aud, sub and exp. */
    requiredClaims: z.array(z.string().min(1)).default([]),
    /** Claim holding the caller's tenant (absent = the default tenant ""). */
    tenantClaim: z.string().min(1).default('tenant'),
  })
  .refine((i) => [i.jwksUri, i.jwks, i.jwksFile].filter((v) => v !== undefined).length === 1, {
    message: 'set exactly one of jwksUri, jwks and jwksFile',
  });
export type IssuerConfig = z.infer<typeof issuerSchema>;

/** A partner that signs its requests (RFC 9421) instead of sending a token. */
const partnerSchema = z.strictObject({
  /** The partner becomes principal `partner:<id>`. */
  id: name,
  /** Its public keys by `keyid`; several allow rotation. Ed25519 (OKP) or ECDSA P-256 (EC) JWKs. */
  keys: z
    .array(
      z.object({
        /** The `keyid` its signatures name. */
        keyId: z.string().min(1),
        /** Public JWK. */
        publicKey: jwk,
      }),
    )
    .min(1),
  /** What the partner may do (scopes, as a token would grant them). */
  scopes: z.array(scope).min(1),
  /** The tenant the partner acts in. */
  tenant: z.string().default(''),
});
export type PartnerConfig = z.infer<typeof partnerSchema>;

const authSchema = z.strictObject({
  /** false turns authentication off (logged as a warning at start; the card then declares no security). */
  enabled: booleanish.default(true),
  /** Trusted issuers; with none, a local development issuer is created in dataDir (npm run token). */
  issuers: z.array(issuerSchema).default([]),
  /** Partners that sign their requests (RFC 9421) instead of sending a token. */
  partners: z.array(partnerSchema).default([]),
  /** Leeway for exp/nbf/iat. */
  clockToleranceSeconds: z.coerce.number().int().min(0).max(600).default(30),
  /** A signed request's `created` must be this recent (and not in the future beyond the clock tolerance); nonces are kept this long. */
  signatureMaxAgeSeconds: z.coerce.number().int().min(1).max(3600).default(300),
  /** How long a fetched remote JWKS is trusted before it is fetched again. */
  jwksCacheSeconds: z.coerce.number().int().min(1).default(600),
  /**
   * Bearer tokens kept after they verified, so a token sent again skips the signature check until
   * its exp (plus clockToleranceSeconds) or for jwksCacheSeconds, whichever ends first (0 = verify every request).
   */
  verifiedTokenCacheEntries: z.coerce.number().int().min(0).max(1_000_000).default(10_000),
});

/** Comma-separated in an environment variable, a list in a config file. */
const stringList = z.preprocess(
  (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter((s) => s !== '') : v),
  z.array(z.string().min(1)),
);

/** Push notifications (spec 4.3.3): durable, ordered, signed webhook deliveries. */
const pushSchema = z.strictObject({
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

/** The replay buffer of each task (its events stream), bounded for open tasks too (docs/replay.md). */
const replaySchema = z.strictObject({
  /** Most events one task's buffer keeps; the oldest go first (0 = no count bound). A resume from before the buffer gets a snapshot. */
  maxEvents: z.coerce.number().int().min(0).default(2_000),
  /** Events older than this leave the buffer of a task that is still open (0 = no age bound). */
  maxAgeSeconds: z.coerce.number().int().min(0).default(86_400),
  /**
   * Events a push config has not been sent yet stay past maxEvents and maxAgeSeconds, up to this
   * many in the buffer (0 = no cap); past it they go, and that config gets a Task snapshot next.
   */
  pushHoldMaxEvents: z.coerce.number().int().min(0).default(10_000),
  /**
   * Most bytes of events one task's buffer keeps, counted as stored; the oldest go first, as past
   * maxEvents, and the newest event always stays (0 = no byte bound).
   */
  maxBytes: z.coerce.number().int().min(0).default(16 * 1024 * 1024),
  /** What push configs hold past the bounds, in bytes (0 = no cap); past it the oldest go, as past pushHoldMaxEvents. */
  pushHoldMaxBytes: z.coerce.number().int().min(0).default(64 * 1024 * 1024),
});

/**
 * What one backend (a remote A2A agent, a model server, an adapter's own HTTP calls through
 * the bounded fetch) may make a worker read: checked while the bytes arrive, so a hostile or
 * broken backend costs at most these, and the turn fails with a reason naming the bound.
 */
const backendLimitsSchema = z.strictObject({
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

/** Schedules (gateway extension): messages sent to an agent later or repeatedly. */
const schedulesSchema = z.strictObject({
  /** Offer schedules (declared on the card as an extension); false answers their methods with UnsupportedOperationError. */
  enabled: booleanish.default(true),
  /** Schedules one owner (principal and agent) may have; completed ones do not count. */
  maxPerOwner: z.coerce.number().int().min(1).max(100_000).default(100),
  /**
   * Shortest time between two firings of a cron schedule, in real time: CreateSchedule refuses an
   * expression with any two consecutive firings closer (daylight-saving changes included), and a
   * firing planned sooner than this after the schedule's previous one is skipped.
   */
  minIntervalSeconds: z.coerce.number().int().min(1).max(31_622_400).default(60),
  /** A firing handled this long after its time was missed (nothing ran then): the schedule's lateness policy decides. */
  lateAfterMs: z.coerce.number().int().min(100).default(60_000),
  /** Most missed firings a catch-up policy may run at once. */
  maxCatchUp: z.coerce.number().int().min(1).max(1_000).default(10),
  /** Firing jobs one worker process runs at once. */
  concurrency: z.coerce.number().int().min(1).max(100).default(4),
  /** How often one worker re-creates jobs active schedules lack and starts firings stuck before their task (0 = off). */
  reconcileIntervalMs: z.coerce.number().int().min(0).default(60_000),
});

/** Traces (OpenTelemetry) and metrics (Prometheus); docs/observability.md lists what they hold. */
const telemetrySchema = z.strictObject({
  /**
   * OTLP endpoint traces are exported to (the collector's base URL, e.g. http://collector:4318;
   * /v1/traces is appended). Unset: tracing is off and costs nothing (no SDK is started).
   */
  otlpEndpoint: z.string().url().optional(),
  /** OTLP over HTTP with protobuf (the OTLP default) or JSON bodies. */
  otlpProtocol: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
  /**
   * Add BullMQ's own spans (its telemetry hook: a producer span per job added, a consumer span
   * per job processed, one per job completion). Off, the turn span is the job's consumer span and
   * the trace context travels in the job's data: half the spans per turn. On, the process also
   * registers OpenTelemetry's AsyncLocalStorage context manager, which BullMQ's hook needs and which
   * makes every promise of a Node 20 process slower (see docs/observability.md for the cost).
   */
  queueSpans: booleanish.default(false),
  /** Share of new traces recorded, 0 to 1 (a caller's traceparent sampled flag decides for its request): lower it to bound tracing's cost under load. */
  sampleRatio: z.coerce.number().min(0).max(1).default(1),
  /** service.name of this process's spans (default: a2a-gateway, or a2a-gateway-worker for a worker-only process). */
  serviceName: z.string().min(1).optional(),
  /** A separate, unauthenticated port serving /metrics, /healthz and /readyz for scrapers and probes (unset: none; workers need it to be scraped). */
  metricsPort: port.optional(),
  /** Address the metrics port listens on (default: host). */
  metricsHost: z.string().min(1).optional(),
});

/** A sub-agent role: which adapter runs its assignments, and how many of one coordinator's run at once. */
const roleSchema = z.strictObject({
  /** "demo", "openai", "a2a" (a remote A2A agent) or a path to an adapter module (like the top-level adapter setting). */
  adapter: z.string().min(1).default('demo'),
  /** Options handed to its adapter factory. */
  adapterOptions: z.record(z.string(), z.json()).default({}),
  /** At most this many of one coordinator's assignments of this role run at once (default: only the coordinator's limit). */
  maxParallel: z.coerce.number().int().min(1).max(64).optional(),
});
export type RoleConfig = z.infer<typeof roleSchema>;

const delegationSchema = z.strictObject({
  /** Assignments of one coordinator that run at once, across all workers; the rest wait in FIFO order. */
  maxParallel: z.coerce.number().int().min(1).max(64).default(4),
  /** Roles by name; a role not listed here runs on the demo adapter. */
  roles: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/), roleSchema).default({}),
});

const consoleSchema = z.strictObject({
  /** Serve the operator console at /console/ (its data comes from the operator operations: a2a:operator to look, a2a:admin to act). */
  enabled: booleanish.default(true),
  /**
   * Most tasks the recent-tasks index (the operators' list across owners) keeps; past it the
   * least recently changed leave it first. Entries also leave after retentionSeconds untouched.
   */
  recentTasksMax: z.coerce.number().int().min(100).default(100_000),
  /**
   * How long a process gathers task changes before it writes them to the indexes: the recent-tasks
   * index in one command, and each owner's task and context indexes and active set in one command
   * per owner (docs/redis-slots.md). An owner's ListTasks order may lag a change by this much.
   */
  recentTasksFlushMs: z.coerce.number().int().min(10).max(10_000).default(1_000),
});

const limitsSchema = z.strictObject({
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

/** An A2A skill as a card declares it (spec 4.4.5), for agents whose skills are configured. */
const skillSchema = z.strictObject({
  /** Unique within the card; a message may ask for it in metadata `skill`. */
  id: z.string().min(1),
  /** Shown to people. */
  name: z.string().min(1),
  /** What the skill does, for people and orchestrators choosing an agent. */
  description: z.string().min(1),
  /** Keywords. */
  tags: z.array(z.string()).default([]),
  /** Example requests. */
  examples: z.array(z.string()).optional(),
  /** Media types the skill accepts (default: the card's). */
  inputModes: z.array(z.string()).optional(),
  /** Media types the skill produces (default: the card's). */
  outputModes: z.array(z.string()).optional(),
});

/** The organization behind an agent (spec 4.4.2 AgentProvider). */
const providerSchema = z.strictObject({
  /** Its name. */
  organization: z.string().min(1),
  /** Its website. */
  url: z.string().url(),
});

/** Card fields of one agent; what is not set comes from the top-level agentName… settings and the adapter. */
const agentCardSchema = z.strictObject({
  /** The card's name (default: a downstream agent's own, else agentName for the default agent and the agent's name for the others). */
  name: z.string().min(1).optional(),
  /** The card's description (default: a downstream agent's own, else agentDescription). */
  description: z.string().optional(),
  /** The card's version (default: agentVersion). */
  version: z.string().min(1).optional(),
  /** The adapter's skills (default; a downstream agent's own for the a2a adapter), a list of skills, or "from downstream": a remote agent's own, re-read every cardRefreshSeconds, the card waiting for them. */
  skills: z.union([z.literal('from downstream'), z.array(skillSchema).min(1)]).optional(),
  /** The card's provider (default: agentProvider). */
  provider: providerSchema.optional(),
  /** The card's documentationUrl (default: agentDocumentationUrl). */
  documentationUrl: z.string().url().optional(),
  /** The card's iconUrl (default: agentIconUrl). */
  iconUrl: z.string().url().optional(),
  /** Added to the card's security scheme descriptions: how to get credentials, whom to ask. */
  securityNotes: z.string().min(1).optional(),
  /** How long a card built from what the adapter learns at run time (a downstream agent's name, description, skills) is kept before it is built again. */
  cardRefreshSeconds: z.coerce.number().int().min(5).default(300),
});

/** Per-agent limits; each one not set is the top-level setting of the same name. */
const agentLimitsSchema = z.strictObject({
  /** Tasks of this agent one principal may have queued or running (0 = no cap). */
  maxActiveTasks: z.coerce.number().int().min(0).optional(),
  /** Messages that may wait for one task's running turn (0 = no bound). */
  maxQueuedMessages: z.coerce.number().int().min(0).optional(),
  /** Requests per second one principal may make to this agent (0 = no limit). */
  requestsPerSecond: z.coerce.number().min(0).optional(),
  /** Requests one principal may make to this agent at once after being idle. */
  burst: z.coerce.number().int().min(1).optional(),
  /** Largest request body this agent's endpoints accept. */
  maxBodyBytes: z.coerce.number().int().min(1024).optional(),
  /** A turn of this agent still running this long after it first started fails (0 = none). */
  turnDeadlineMs: z.coerce.number().int().min(0).optional(),
  /** Units a turn of this agent may spend through ctx.budget (0 = no budget). */
  turnBudget: z.coerce.number().min(0).optional(),
  /** Turns of this agent one worker process runs at once. */
  workerConcurrency: z.coerce.number().int().min(1).max(1000).optional(),
  /** Bytes one artifact of this agent's tasks may grow to. */
  maxArtifactBytes: z.coerce.number().int().min(1024).optional(),
  /** Bytes of events one turn of this agent may store. */
  maxTurnOutputBytes: z.coerce.number().int().min(1024).optional(),
  /** Bytes of events all turns of one task of this agent may store together. */
  maxTaskOutputBytes: z.coerce.number().int().min(1024).optional(),
});

/**
 * What happens to a message sent to a task whose turn is queued or running: `enqueue` (it
 * becomes the next turn's input), `reject` (refused, nothing changes) or `interrupt` (the
 * running turn is stopped through the cancel stages and the next turn starts at once with all
 * pending input).
 */
export const INPUT_POLICIES = ['enqueue', 'reject', 'interrupt'] as const;
export type InputPolicy = (typeof INPUT_POLICIES)[number];

/** One agent behind the gateway: its adapter, card, limits and input policy. */
const agentSchema = z.strictObject({
  /** "demo", "a2a" (a remote A2A agent), "openai" (an OpenAI-compatible model) or a path to an adapter module. */
  adapter: z.string().min(1).default('demo'),
  /** Options handed to its adapter factory. */
  adapterOptions: z.record(z.string(), z.json()).default({}),
  card: agentCardSchema.default(agentCardSchema.parse({})),
  /** What a message to a task whose turn is queued or running does: enqueue, reject or interrupt (docs/agents.md). */
  inputPolicy: z.enum(INPUT_POLICIES).default('enqueue'),
  /** Scopes of which a caller must hold at least one to use this agent, besides the operation's own (operators, a2a:operator or a2a:admin, always may). Empty: every caller. */
  scopes: z.array(scope).default([]),
  limits: agentLimitsSchema.default({}),
  /** What this agent's backend may make a worker read; each bound not set is the top-level backendLimits one. */
  backendLimits: backendLimitsSchema.partial().default({}),
});
export type AgentConfig = z.infer<typeof agentSchema>;
export const AGENT_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Structural bounds of a JSON request body, checked while the body arrives and before it is
 * parsed: a body past one is refused with -32600 / 400 naming the bound, at a cost linear in
 * its size however it is shaped.
 */
const jsonLimitsSchema = z.strictObject({
  /** Deepest nesting of objects and arrays (reason JSON_TOO_DEEP). */
  maxDepth: z.coerce.number().int().min(8).max(1000).default(64),
  /** Most members of one object (JSON_TOO_MANY_KEYS). */
  maxObjectKeys: z.coerce.number().int().min(16).default(1_000),
  /** Most elements of one array (JSON_ARRAY_TOO_LONG). */
  maxArrayLength: z.coerce.number().int().min(16).default(10_000),
  /** Most values in the whole document, every object member and array element counted (JSON_TOO_MANY_VALUES). */
  maxNodes: z.coerce.number().int().min(64).default(100_000),
});
export type JsonLimits = z.infer<typeof jsonLimitsSchema>;

/**
 * Which reverse proxies may tell the gateway, through `Forwarded` (RFC 7239) or
 * `X-Forwarded-For/-Proto/-Host/-Prefix`, the client's address and the URL the client
 * addressed: false (default: the headers are ignored), true (any peer), or a list of
 * addresses and CIDR ranges of trusted proxies (`loopback`, `linklocal` and `uniquelocal`
 * name the usual ranges). In the environment: `true`, `false` or a comma-separated list.
 */
const trustProxySchema = z
  .union([
    z.boolean(),
    z.array(z.string().min(1)).min(1),
    z.string().transform((value, context) => {
      const trimmed = value.trim();
      if (['true', '1'].includes(trimmed)) return true;
      if (['false', '0', ''].includes(trimmed)) return false;
      const list = trimmed.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
      if (list.length === 0) context.addIssue({ code: 'custom', message: 'true, false, or a comma-separated list of proxy addresses' });
      return list;
    }),
  ])
  .default(false);
export type TrustProxySetting = boolean | string[];

/**
 * Every setting, with its default. Environment variables (A2A_*) override the config file,
 * which overrides these defaults; docs/configuration.md is generated from this schema and its comments (npm run docs:config).
 */
export const configSchema = z.object({
  /** Redis connection URL shared by every gateway and worker of one deployment. */
  redisUrl: z.string().url().default('redis://127.0.0.1:6379'),
  /**
   * Redis Cluster seed nodes as `host:port` (comma-separated in A2A_REDIS_CLUSTER_NODES). When
   * set, every connection is a Cluster connection, live delivery uses sharded pub/sub and BullMQ
   * queues get hash-tagged prefixes (docs/redis-cluster.md); `redisUrl` then only lends its
   * username, password and TLS setting to every node. Empty: a single Redis at `redisUrl`.
   */
  redisClusterNodes: stringList
    .default([])
    .superRefine((entries, ctx) => {
      for (const entry of entries) {
        if (!/^[^\s:]+:\d{1,5}$/.test(entry) || Number(entry.slice(entry.lastIndexOf(':') + 1)) > 65535) {
          ctx.addIssue({ code: 'custom', message: `"${entry}" is not host:port; give seed nodes like 10.0.0.1:7000,10.0.0.2:7000` });
        }
      }
    }),
  /** Prefix of every Redis key and BullMQ queue; deployments sharing a Redis use distinct ones. */
  keyPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, "_", "." and "-" only, 1 to 64 characters')
    .default('a2a'),
  /** Listen address (`0.0.0.0` for all interfaces). */
  host: z.string().min(1).default('127.0.0.1'),
  /** Listen port (0 = any free port); the platform's PORT variable is used when A2A_PORT is not set. */
  port: port.default(8080),
  /**
   * Port of /healthz and /readyz for a process that runs workers only (the worker command), for
   * platform probes (0 = any free port, printed at start); unset: none. Gateways answer both on port.
   */
  healthPort: port.optional(),
  /**
   * Port of the gRPC binding (spec 10, docs/grpc.md): "off" (the default, so a first run needs
   * one free port only), 0 for any free port, or a port such as 50051. When on, every agent's
   * card declares a GRPC interface at grpcPublicAddress.
   */
  grpcPort: z.union([z.literal('off'), port], { error: 'a port number (0 = any free port) or "off"' }).default('off'),
  /** Where the gRPC binding listens; default: host. */
  grpcHost: z.string().min(1).optional(),
  /**
   * PEM certificate chain and private key for the gRPC binding's TLS (relative paths against
   * the config file's directory). Both or neither: without them it speaks plaintext HTTP/2 and
   * TLS is terminated in front of it.
   */
  grpcTlsCertFile: z.string().min(1).optional(),
  /** The private key that goes with grpcTlsCertFile (PEM). */
  grpcTlsKeyFile: z.string().min(1).optional(),
  /** host:port clients use to reach the gRPC binding (the cards' GRPC interface). Defaults to publicUrl's host with the bound gRPC port. */
  grpcPublicAddress: z.string().regex(/^[^\s/]+:\d{1,5}$/, 'host:port, e.g. a2a.example.com:443').optional(),
  /** URL clients use to reach this gateway (what the agent card advertises). Defaults to http://host:port. */
  publicUrl: z.string().url().optional(),
  /** The card's name of the default agent when its `card` sets none (a downstream agent's own name wins over this default). */
  agentName: z.string().min(1).default('a2a-gateway demo agent'),
  /** The card's description, likewise. */
  agentDescription: z
    .string()
    .default('A durable A2A 1.0 gateway: tasks survive closed connections, killed workers and restarts.'),
  /** The card's version, likewise. */
  agentVersion: z.string().min(1).default('0.1.0'),
  /**
   * The default agent's adapter: "demo", "a2a" (a remote A2A agent), "openai" (an OpenAI-compatible model) or a path to an adapter module (relative
   * to the config file, else to the working directory). Without `agents` it is the only agent.
   */
  adapter: z.string().min(1).optional(),
  /** Options handed to the default agent's adapter factory (demo: {"stepMs":50}; a2a: {"url":…}; openai: {"baseURL":…,"model":…}; see docs/adapters.md). */
  adapterOptions: z.record(z.string(), z.json()).optional(),
  /**
   * Several agents behind one gateway, by name (the name is their URL segment:
   * /agents/<name>/…). Without it the gateway fronts one agent named "default" built from
   * adapter, adapterOptions and agentName/agentDescription/agentVersion.
   */
  agents: z.record(z.string().regex(AGENT_NAME_PATTERN, 'agent names are 1 to 64 letters, digits, "_", "." or "-"'), agentSchema).optional(),
  /** The agent served at the root URLs (/.well-known/agent-card.json, /a2a/…); default: the first one listed. */
  defaultAgent: z.string().regex(AGENT_NAME_PATTERN).optional(),
  /** Which agents this process's workers run turns for (default: all). */
  workerAgents: z.preprocess(
    (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter((s) => s !== '') : v),
    z.array(z.string().regex(AGENT_NAME_PATTERN)).min(1).optional(),
  ),
  /** Turns one worker process runs at once. */
  workerConcurrency: z.coerce.number().int().min(1).max(1000).default(32),
  /** How often a turn may be started before it fails with a reason naming the limit. */
  maxTurnAttempts: z.coerce.number().int().min(1).max(100).default(3),
  /** A turn still running this long after it first started fails, naming the limit (0 = no deadline). Survives worker changes. */
  turnDeadlineMs: z.coerce.number().int().min(0).default(900_000),
  /** Units a turn may spend through ctx.budget before it fails, naming the limit (0 = no budget). The total survives worker changes and starts at 0 with each new turn. */
  turnBudget: z.coerce.number().min(0).default(0),
  /** BullMQ job lock; a worker that stops renewing it for this long has its turn recovered elsewhere. */
  lockDurationMs: positiveMs.default(30_000),
  /** How often workers look for turns whose worker died (BullMQ stall detection). */
  stalledIntervalMs: positiveMs.default(15_000),
  /**
   * How often one worker (whichever takes a Redis lock) re-queues open tasks whose turn job is
   * gone (removed, lost, failed for good) and that have had no lease and no update for
   * 2 × lockDurationMs, logging a warning for each, and drops owners' active-task entries of
   * tasks that are gone or finished (0 = off).
   */
  reconcileIntervalMs: z.coerce.number().int().min(0).default(30_000),
  /** Largest accepted request body; larger get 413, judged from Content-Length before the body is read, else as it arrives. */
  maxBodyBytes: z.coerce.number().int().min(1024).default(1_048_576),
  /** Structural bounds of JSON request bodies (depth, keys, array lengths, values). */
  jsonLimits: jsonLimitsSchema.default(jsonLimitsSchema.parse({})),
  /** How requests are read on the JSON-RPC and HTTP+JSON bindings. */
  protocol: z
    .strictObject({
      /**
       * Refuse a request holding a field A2A 1.0 does not define (-32602 / 400 INVALID_ARGUMENT naming it, and the 1.0 name
       * for a known 0.3 one) instead of ignoring it. Either way each such request is logged at WARN. 0.3 requests are read
       * by the 0.3 layer and never refused for their 0.3 names.
       */
      strictRequestFields: booleanish.default(false),
    })
    .default({ strictRequestFields: false }),
  /**
   * A refused request whose body has not all arrived (413, 401, 429, …) gets its answer with
   * `Connection: close` at once; the gateway then reads and discards at most this many more body
   * bytes (for at most 5 s), so a client sending a small body reads the error instead of a
   * connection reset, and closes the connection: what it refused is never read whole.
   */
  refusedBodyDrainBytes: z.coerce.number().int().min(0).default(65_536),
  /**
   * How long a client may take to send a whole request, headers and body; then it gets 408
   * (if nothing was answered yet) and the connection is closed. Responses are not limited:
   * SSE streams and blocking SendMessage calls last as long as they need.
   */
  requestTimeoutMs: positiveMs.default(30_000),
  /** How long a client may take to send the request headers. */
  headersTimeoutMs: positiveMs.default(10_000),
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveTimeoutMs: positiveMs.default(65_000),
  /** Most request header fields; a request with more gets 431 (instead of losing the rest). */
  maxHeaderCount: z.coerce.number().int().min(16).max(1000).default(100),
  /**
   * Most open client connections (SSE streams included); more are closed as they arrive, so
   * file descriptors remain for Redis and for the clients already connected.
   * Default: the process's open-file limit minus 128.
   */
  maxConnections: z.coerce.number().int().min(1).optional(),
  /**
   * Most open connections from one client address (0 = no per-address cap). Connections from
   * trusted proxies (trustProxy) are not counted: behind a proxy every client shares its address.
   */
  maxConnectionsPerAddress: z.coerce.number().int().min(0).default(0),
  /** Bytes an SSE stream may have waiting for a slow reader; past it the stream ends with a SLOW_READER error frame (resume with Last-Event-ID). */
  sseMaxBufferedBytes: z.coerce.number().int().min(16_384).default(1_048_576),
  trustProxy: trustProxySchema,
  /** SSE comment heartbeat on idle streams. */
  heartbeatMs: positiveMs.default(15_000),
  /** Longest a blocking SendMessage waits; then it returns the task in its current state. */
  blockingTimeoutMs: positiveMs.default(300_000),
  /**
   * How long a gateway rides out a lost Redis connection: requests and streams wait this long
   * for the reconnect (a blip is invisible); past it they fail with 503 + Retry-After, and SSE
   * streams end with an error naming the Last-Event-ID to resume from. Workers always wait.
   */
  redisOutageGraceMs: positiveMs.default(3_000),
  /**
   * A gateway's Redis command that gets no answer this long (a hung, not a disconnected, Redis)
   * fails the request with 503 + Retry-After; /readyz answers not-ready within a second.
   * Workers always wait. A command that timed out may still have run: re-sending a message
   * with the same messageId is safe.
   */
  redisCommandTimeoutMs: positiveMs.default(2_000),
  /**
   * Largest Redis command (all its arguments together) a connection sends; a larger one is
   * refused before it is queued, its caller gets an error naming this setting, and a turn that
   * tried it fails. Keep it well below Redis's proto-max-bulk-len (512 MB).
   */
  redisMaxCommandBytes: z.coerce.number().int().min(1024 * 1024).max(512 * 1024 * 1024).default(256 * 1024 * 1024),
  /**
   * Replicas that must confirm (Redis WAIT) a task's or message's acceptance before the gateway
   * answers, and a turn's final state before its worker lets the turn's job go (0 = none, no WAIT
   * is sent). Without it a write a master acknowledged and then lost in a failover, before any
   * replica received it, is gone (docs/redis-cluster.md, "What a failover can lose"). When fewer
   * replicas confirm within redisWaitTimeoutMs, the request fails with 503 + Retry-After (the
   * write stands on the master; re-sending the same messageId is safe).
   */
  redisWaitReplicas: z.coerce.number().int().min(0).max(16).default(0),
  /** How long a WAIT may take (redisWaitReplicas); keep it below redisCommandTimeoutMs, since commands sent after a WAIT on its connection wait for it. */
  redisWaitTimeoutMs: positiveMs.default(500),
  /** How long CancelTask waits for a running turn to stop before returning the task. */
  cancelWaitMs: z.coerce.number().int().min(0).default(5_000),
  /** How long a (caller, messageId) pair is remembered for de-duplicating re-sent messages. */
  idempotencyTtlSeconds: z.coerce.number().int().min(60).default(86_400),
  /** New messages are refused with 503 + Retry-After while this many turns wait for a worker (0 = no bound). */
  maxQueuedTurns: z.coerce.number().int().min(0).default(10_000),
  /**
   * At shutdown (SIGTERM), how long a gateway keeps serving while /readyz answers 503, so a load
   * balancer or Kubernetes stops sending it requests before it closes (0 = close at once).
   */
  shutdownDrainMs: z.coerce.number().int().min(0).max(120_000).default(0),
  /** At shutdown, how long a worker lets running turns finish before handing them back. */
  shutdownGraceMs: z.coerce.number().int().min(0).default(10_000),
  /** How long a finished task (and its replay buffer) stays readable before it expires. */
  retentionSeconds: z.coerce.number().int().min(60).default(604_800),
  /** Bounds of each task's replay buffer: count, age, and what push deliveries may hold. */
  replay: replaySchema.default(replaySchema.parse({})),
  /** What a backend (remote agent, model server) may make a worker read: bytes per answer, per event, per stream, and time. */
  backendLimits: backendLimitsSchema.default(backendLimitsSchema.parse({})),
  /** Where the gateway keeps what it generates: the development issuer key and the card signing key. */
  dataDir: z.string().min(1).default('.data'),
  /** Who may call: token issuers, signing partners, clock leeway. */
  auth: authSchema.default(authSchema.parse({})),
  /** Rate limits and caps per principal and agent, and for failing authentications per address. */
  limits: limitsSchema.default(limitsSchema.parse({})),
  /** Push notifications: receivers, timeouts, retries, breaker, dead letters, signing key. */
  push: pushSchema.default(pushSchema.parse({})),
  /** Schedules: per-owner limits, shortest interval, lateness. */
  schedules: schedulesSchema.default(schedulesSchema.parse({})),
  /** Traces (OTLP export) and the metrics port. */
  telemetry: telemetrySchema.default(telemetrySchema.parse({})),
  /** Sub-agent coordination (ctx.delegate). */
  delegation: delegationSchema.default(delegationSchema.parse({})),
  /** The operator console and the operators' task index (docs/console.md). */
  console: consoleSchema.default(consoleSchema.parse({})),
  /** Sign the agent card (spec 8.4) with the key in dataDir (or cardSigningKeyFile); its public key is at /.well-known/jwks.json. */
  cardSigning: booleanish.default(true),
  /** Private JWK file (ES256 or EdDSA) of the card signing key; default: generated in dataDir. Give every gateway the same file. */
  cardSigningKeyFile: z.string().min(1).optional(),
  /**
   * JWK files (private or public) of keys that signed cards before a rotation: published on
   * /.well-known/jwks.json beside the current key until removed (the rotation's overlap window).
   */
  cardSigningPreviousKeyFiles: z.array(z.string().min(1)).default([]),
  /** Card fields every agent inherits (each agent's `card` may set its own). */
  agentProvider: providerSchema.optional(),
  /** The card's documentationUrl, inherited by every agent. */
  agentDocumentationUrl: z.string().url().optional(),
  /** The card's iconUrl, inherited by every agent. */
  agentIconUrl: z.string().url().optional(),
  /** Added to the card's security scheme descriptions: how to get credentials, whom to ask. */
  agentSecurityNotes: z.string().min(1).optional(),
  /** JSON logs on stderr at this level and above; a client that gives up mid-request is a debug line, not an error. */
  logLevel: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  /** One info line per finished request (method, path, status, duration, agent, operation, task id, principal, trace id from traceparent; never a credential); probes at debug. */
  accessLog: booleanish.default(true),
  /**
   * Browser origins allowed to call the A2A bindings and /agents: ['*'] (any, the default, for the
   * demo and A2A inspectors) or a list such as ['https://console.example.com']. Cards and the JWKS stay public.
   */
  corsOrigins: z.preprocess(
    (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter((s) => s !== '') : v),
    z.array(z.string().regex(/^(\*|https?:\/\/[^/\s]+)$/, 'an origin is "*" or scheme://host[:port], without a path')).min(1),
  ).default(['*']),
  /**
   * Production mode (also on when NODE_ENV=production): the gateway refuses to start with the
   * development token issuer, which it otherwise uses when no issuer is configured.
   */
  production: booleanish.default(false),
  /** Which roles this process runs (the CLI sets it from the command). */
  roles: z
    .object({
      /** Serve HTTP (the serve and start commands). */
      gateway: booleanish.default(true),
      /** Run turns, push deliveries and schedule firings (the worker and start commands). */
      worker: booleanish.default(true),
    })
    .default({ gateway: true, worker: true }),
});

export type GatewayConfig = z.infer<typeof configSchema>;

/** Environment variable → config key (a dotted path for nested settings). */
export const ENV_KEYS: Record<string, string> = {
  A2A_REDIS_URL: 'redisUrl',
  A2A_REDIS_CLUSTER_NODES: 'redisClusterNodes',
  A2A_KEY_PREFIX: 'keyPrefix',
  A2A_HOST: 'host',
  A2A_PORT: 'port',
  A2A_GRPC_PORT: 'grpcPort',
  A2A_GRPC_HOST: 'grpcHost',
  A2A_GRPC_PUBLIC_ADDRESS: 'grpcPublicAddress',
  A2A_GRPC_TLS_CERT_FILE: 'grpcTlsCertFile',
  A2A_GRPC_TLS_KEY_FILE: 'grpcTlsKeyFile',
  A2A_PUBLIC_URL: 'publicUrl',
  A2A_HEALTH_PORT: 'healthPort',
  A2A_AGENT_NAME: 'agentName',
  A2A_AGENT_DESCRIPTION: 'agentDescription',
  A2A_AGENT_VERSION: 'agentVersion',
  A2A_ADAPTER: 'adapter',
  A2A_DEFAULT_AGENT: 'defaultAgent',
  A2A_WORKER_AGENTS: 'workerAgents',
  A2A_WORKER_CONCURRENCY: 'workerConcurrency',
  A2A_MAX_TURN_ATTEMPTS: 'maxTurnAttempts',
  A2A_TURN_DEADLINE_MS: 'turnDeadlineMs',
  A2A_TURN_BUDGET: 'turnBudget',
  A2A_LOCK_DURATION_MS: 'lockDurationMs',
  A2A_STALLED_INTERVAL_MS: 'stalledIntervalMs',
  A2A_RECONCILE_INTERVAL_MS: 'reconcileIntervalMs',
  A2A_MAX_BODY_BYTES: 'maxBodyBytes',
  A2A_STRICT_REQUEST_FIELDS: 'protocol.strictRequestFields',
  A2A_JSON_MAX_DEPTH: 'jsonLimits.maxDepth',
  A2A_JSON_MAX_OBJECT_KEYS: 'jsonLimits.maxObjectKeys',
  A2A_JSON_MAX_ARRAY_LENGTH: 'jsonLimits.maxArrayLength',
  A2A_JSON_MAX_NODES: 'jsonLimits.maxNodes',
  A2A_REFUSED_BODY_DRAIN_BYTES: 'refusedBodyDrainBytes',
  A2A_REQUEST_TIMEOUT_MS: 'requestTimeoutMs',
  A2A_HEADERS_TIMEOUT_MS: 'headersTimeoutMs',
  A2A_KEEP_ALIVE_TIMEOUT_MS: 'keepAliveTimeoutMs',
  A2A_MAX_HEADER_COUNT: 'maxHeaderCount',
  A2A_MAX_CONNECTIONS: 'maxConnections',
  A2A_MAX_CONNECTIONS_PER_ADDRESS: 'maxConnectionsPerAddress',
  A2A_SSE_MAX_BUFFERED_BYTES: 'sseMaxBufferedBytes',
  A2A_TRUST_PROXY: 'trustProxy',
  A2A_REDIS_COMMAND_TIMEOUT_MS: 'redisCommandTimeoutMs',
  A2A_REDIS_MAX_COMMAND_BYTES: 'redisMaxCommandBytes',
  A2A_PRODUCTION: 'production',
  A2A_HEARTBEAT_MS: 'heartbeatMs',
  A2A_BLOCKING_TIMEOUT_MS: 'blockingTimeoutMs',
  A2A_REDIS_OUTAGE_GRACE_MS: 'redisOutageGraceMs',
  A2A_REDIS_WAIT_REPLICAS: 'redisWaitReplicas',
  A2A_REDIS_WAIT_TIMEOUT_MS: 'redisWaitTimeoutMs',
  A2A_CANCEL_WAIT_MS: 'cancelWaitMs',
  A2A_IDEMPOTENCY_TTL_SECONDS: 'idempotencyTtlSeconds',
  A2A_RETENTION_SECONDS: 'retentionSeconds',
  A2A_BACKEND_MAX_RESPONSE_BYTES: 'backendLimits.maxResponseBytes',
  A2A_BACKEND_MAX_EVENT_BYTES: 'backendLimits.maxEventBytes',
  A2A_BACKEND_MAX_STREAM_BYTES: 'backendLimits.maxStreamBytes',
  A2A_BACKEND_BODY_TIMEOUT_MS: 'backendLimits.bodyTimeoutMs',
  A2A_BACKEND_STREAM_IDLE_TIMEOUT_MS: 'backendLimits.streamIdleTimeoutMs',
  A2A_REPLAY_MAX_EVENTS: 'replay.maxEvents',
  A2A_REPLAY_MAX_AGE_SECONDS: 'replay.maxAgeSeconds',
  A2A_REPLAY_PUSH_HOLD_MAX_EVENTS: 'replay.pushHoldMaxEvents',
  A2A_REPLAY_MAX_BYTES: 'replay.maxBytes',
  A2A_REPLAY_PUSH_HOLD_MAX_BYTES: 'replay.pushHoldMaxBytes',
  A2A_SHUTDOWN_GRACE_MS: 'shutdownGraceMs',
  A2A_MAX_QUEUED_TURNS: 'maxQueuedTurns',
  A2A_LOG_LEVEL: 'logLevel',
  A2A_ACCESS_LOG: 'accessLog',
  A2A_CORS_ORIGINS: 'corsOrigins',
  A2A_DATA_DIR: 'dataDir',
  A2A_AUTH_ENABLED: 'auth.enabled',
  A2A_AUTH_CLOCK_TOLERANCE_SECONDS: 'auth.clockToleranceSeconds',
  A2A_AUTH_VERIFIED_TOKEN_CACHE_ENTRIES: 'auth.verifiedTokenCacheEntries',
  A2A_SIGNATURE_MAX_AGE_SECONDS: 'auth.signatureMaxAgeSeconds',
  A2A_RATE_LIMIT_PER_SECOND: 'limits.requestsPerSecond',
  A2A_RATE_LIMIT_BURST: 'limits.burst',
  A2A_REQUEST_BYTES_PER_TOKEN: 'limits.requestBytesPerToken',
  A2A_MAX_ACTIVE_TASKS: 'limits.maxActiveTasks',
  A2A_INGRESS_BYTES_PER_SECOND: 'limits.ingressBytesPerSecond',
  A2A_INGRESS_BURST_BYTES: 'limits.ingressBurstBytes',
  A2A_STORED_BYTES_PER_SECOND: 'limits.storedBytesPerSecond',
  A2A_STORED_BURST_BYTES: 'limits.storedBurstBytes',
  A2A_OUTPUT_BYTES_PER_SECOND: 'limits.outputBytesPerSecond',
  A2A_OUTPUT_BURST_BYTES: 'limits.outputBurstBytes',
  A2A_MAX_RUNNING_TURNS_PER_OWNER: 'limits.maxRunningTurnsPerOwner',
  A2A_MAX_RUNNING_TURNS_PER_TENANT: 'limits.maxRunningTurnsPerTenant',
  A2A_MAX_QUEUED_MESSAGES: 'limits.maxQueuedMessages',
  A2A_UNAUTHENTICATED_PER_SECOND: 'limits.unauthenticatedPerSecond',
  A2A_UNAUTHENTICATED_BURST: 'limits.unauthenticatedBurst',
  A2A_MAX_LIST_PAGE_BYTES: 'limits.maxListPageBytes',
  A2A_MAX_LIST_SCANNED_ENTRIES: 'limits.maxListScannedEntries',
  A2A_MAX_CONCURRENT_LISTS_PER_OWNER: 'limits.maxConcurrentListsPerOwner',
  A2A_MAX_STORED_BYTES: 'limits.maxStoredBytes',
  A2A_MAX_STORED_TASKS: 'limits.maxStoredTasks',
  A2A_MAX_STREAMS_PER_OWNER: 'limits.maxStreamsPerOwner',
  A2A_MAX_STREAMS: 'limits.maxStreams',
  A2A_STREAM_SLOT_TTL_MS: 'limits.streamSlotTtlMs',
  A2A_MAX_ARTIFACT_BYTES: 'limits.maxArtifactBytes',
  A2A_MAX_TURN_OUTPUT_BYTES: 'limits.maxTurnOutputBytes',
  A2A_MAX_TASK_OUTPUT_BYTES: 'limits.maxTaskOutputBytes',
  A2A_DELEGATION_MAX_PARALLEL: 'delegation.maxParallel',
  A2A_CONSOLE_ENABLED: 'console.enabled',
  A2A_CONSOLE_RECENT_TASKS_MAX: 'console.recentTasksMax',
  A2A_CARD_SIGNING: 'cardSigning',
  A2A_PUSH_ENABLED: 'push.enabled',
  A2A_PUSH_ALLOWED_HOSTS: 'push.allowedHosts',
  A2A_PUSH_TIMEOUT_MS: 'push.timeoutMs',
  A2A_PUSH_MAX_CONFIGS_PER_TASK: 'push.maxConfigsPerTask',
  A2A_PUSH_CONCURRENCY: 'push.concurrency',
  A2A_PUSH_RETRY_HORIZON_MS: 'push.retryHorizonMs',
  A2A_PUSH_SIGNING_KEY_FILE: 'push.signingKeyFile',
  A2A_PUSH_SIGNING_PREVIOUS_KEY_FILES: 'push.signingPreviousKeyFiles',
  A2A_PUSH_SIGNING_KEY_OVERLAP_SECONDS: 'push.signingKeyOverlapSeconds',
  A2A_SCHEDULES_ENABLED: 'schedules.enabled',
  A2A_SCHEDULES_MAX_PER_OWNER: 'schedules.maxPerOwner',
  A2A_SCHEDULES_MIN_INTERVAL_SECONDS: 'schedules.minIntervalSeconds',
  A2A_CARD_SIGNING_KEY_FILE: 'cardSigningKeyFile',
  A2A_SHUTDOWN_DRAIN_MS: 'shutdownDrainMs',
  // The OpenTelemetry variables first, so the A2A_ ones win when both are set.
  OTEL_EXPORTER_OTLP_ENDPOINT: 'telemetry.otlpEndpoint',
  OTEL_EXPORTER_OTLP_PROTOCOL: 'telemetry.otlpProtocol',
  OTEL_SERVICE_NAME: 'telemetry.serviceName',
  A2A_OTLP_ENDPOINT: 'telemetry.otlpEndpoint',
  A2A_TRACE_QUEUE_SPANS: 'telemetry.queueSpans',
  A2A_TRACE_SAMPLE_RATIO: 'telemetry.sampleRatio',
  A2A_METRICS_PORT: 'telemetry.metricsPort',
  A2A_METRICS_HOST: 'telemetry.metricsHost',
};
