// The top level of the configuration; each section it nests (auth, limits, push, agents…) is a
// file of ./schema/. The keys' doc comments in these files are the configuration reference.
import { z } from 'zod';
import { consumerInput } from './schema/consumers.ts';
import { agentSchema, AGENT_NAME_PATTERN, providerSchema } from './schema/agents.ts';
import { authSchema } from './schema/auth.ts';
import { backendLimitsSchema } from './schema/backend-limits.ts';
import { consoleSchema } from './schema/console.ts';
import { delegationSchema } from './schema/delegation.ts';
import { limitsSchema } from './schema/limits.ts';
import { mcpSchema } from './schema/mcp.ts';
import { pushSchema } from './schema/push.ts';
import { replaySchema } from './schema/replay.ts';
import { jsonLimitsSchema, trustProxySchema } from './schema/requests.ts';
import { schedulesSchema } from './schema/schedules.ts';
import { telemetrySchema } from './schema/telemetry.ts';
import { booleanish, port, positiveMs, shortName, stringList } from './schema/values.ts';

export { AGENT_NAME_PATTERN, INPUT_POLICIES, type AgentConfig, type InputPolicy } from './schema/agents.ts';
export { JWT_ALGORITHMS, type IssuerConfig, type PartnerConfig } from './schema/auth.ts';
export { DEFAULT_BACKEND_LIMITS, type BackendLimitsConfig } from './schema/backend-limits.ts';
export { type RoleConfig } from './schema/delegation.ts';
export { type McpConfig } from './schema/mcp.ts';
export { type JsonLimits, type TrustProxySetting } from './schema/requests.ts';
export { isGrantableScope } from './schema/scopes.ts';
export { ENV_KEYS } from './env-keys.ts';

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
  /**
   * A new task's first turn, and the turn a follow-up message opens, start at once in the process
   * that accepted the message, when that process also runs the agent's turns and has a free place
   * among its workerConcurrency (a caller that follows its turn, a blocking or streaming send,
   * waits up to a second for one while places keep being given back, whatever the queue holds):
   * no queue job, two Redis round trips less on the caller's path.
   * Off: every turn goes through the queue.
   * Should the process die mid-turn, the reconciler queues the turn again (reconcileIntervalMs).
   */
  localTurns: booleanish.default(true),
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
   * 2 × lockDurationMs (lockDurationMs / 2 for a turn that had no job: started where it was
   * accepted, localTurns, in a process that died), logging a warning for each, and drops owners'
   * active-task entries of tasks that are gone or finished (0 = off).
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
   * connection reset, and closes the connection: what it refused is never read whole. A refusal
   * to an address past its unauthenticated limit (a flood's 429) drains between half and all of
   * it, at random, so a flood's connections are not all cut at once.
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
  /**
   * Longest a GetTask waits for a task generation (A2A-Task-Generation-After, the task-generations
   * extension): a longer A2A-Task-Generation-Wait-Ms is cut to it, and the default wait (10 s) too.
   */
  taskGenerationMaxWaitMs: z.coerce.number().int().min(0).max(300_000).default(30_000),
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
  /** The MCP face at /mcp: every agent a caller may use as a tool (docs/mcp.md). */
  mcp: mcpSchema.default(mcpSchema.parse({})),
  /** Adapters an agent written through the admin API may use: built-in names ("demo", "openai", "a2a"); a module path only when listed here verbatim, since the API would otherwise choose code to run (docs/admin-api.md). Empty: no agents through the API. */
  storedAgentAdapters: stringList.default(['demo', 'openai', 'a2a']),
  /** Consumers by id: who each is (members) and its plan of limits (docs/consumers.md); read-only through the admin API, which adds others. */
  consumers: z.record(shortName, consumerInput).optional(),
  /** Sign the agent card (spec 8.4) with the key in dataDir (or cardSigningKeyFile); its public key is at /.well-known/jwks.json. */
  cardSigning: booleanish.default(true),
  /** Private JWK file (ES256 or EdDSA) of the card signing key; default: generated in dataDir. Give every gateway the same file. */
  cardSigningKeyFile: z.string().min(1).optional(),
  /** Private JWK file (ES256 or EdDSA) of the key that signs caller identity tokens to backends (an agent's callerIdentity); default: generated in dataDir. Give every gateway and worker the same file. */
  callerIdentityKeyFile: z.string().min(1).optional(),
  /** JWK files (private or public) published on /.well-known/jwks.json beside the caller identity key without signing: the next key before a rotation, the old one after it (docs/operations.md). */
  callerIdentityPublishedKeyFiles: z.array(z.string().min(1)).default([]),
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
