import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65535);
const positiveMs = z.coerce.number().int().min(1);
const booleanish = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1');

/**
 * Every setting, with its default. Environment variables (A2A_*) override the config file,
 * which overrides these defaults; the README's configuration reference mirrors this schema.
 */
export const configSchema = z.object({
  /** Redis connection URL shared by every gateway and worker of one deployment. */
  redisUrl: z.string().url().default('redis://127.0.0.1:6379'),
  /** Prefix of every Redis key and BullMQ queue; deployments sharing a Redis use distinct ones. */
  keyPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, "_", "." and "-" only, 1 to 64 characters')
    .default('a2a'),
  host: z.string().min(1).default('127.0.0.1'),
  port: port.default(8080),
  /** URL clients use to reach this gateway (what the agent card advertises). Defaults to http://host:port. */
  publicUrl: z.string().url().optional(),
  agentName: z.string().min(1).default('a2a-gateway demo agent'),
  agentDescription: z
    .string()
    .default('A durable A2A 1.0 gateway: tasks survive closed connections, killed workers and restarts.'),
  agentVersion: z.string().min(1).default('0.1.0'),
  /** "demo" or a path to an adapter module (relative to the config file, else to the working directory). */
  adapter: z.string().min(1).default('demo'),
  /** Options handed to the adapter factory. */
  adapterOptions: z.record(z.string(), z.json()).default({}),
  /** Turns one worker process runs at once. */
  workerConcurrency: z.coerce.number().int().min(1).max(1000).default(32),
  /** How often a turn may be started before it fails with a reason naming the limit. */
  maxTurnAttempts: z.coerce.number().int().min(1).max(100).default(3),
  /** A turn still running this long after it first started fails, naming the limit (0 = no deadline). Survives worker changes. */
  turnDeadlineMs: z.coerce.number().int().min(0).default(900_000),
  /** BullMQ job lock; a worker that stops renewing it for this long has its turn recovered elsewhere. */
  lockDurationMs: positiveMs.default(30_000),
  /** How often workers look for turns whose worker died (BullMQ stall detection). */
  stalledIntervalMs: positiveMs.default(15_000),
  /** Largest accepted request body. */
  maxBodyBytes: z.coerce.number().int().min(1024).default(1_048_576),
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
  /** How long CancelTask waits for a running turn to stop before returning the task. */
  cancelWaitMs: z.coerce.number().int().min(0).default(5_000),
  /** How long a (caller, messageId) pair is remembered for de-duplicating re-sent messages. */
  idempotencyTtlSeconds: z.coerce.number().int().min(60).default(86_400),
  /** New messages are refused with 503 + Retry-After while this many turns wait for a worker (0 = no bound). */
  maxQueuedTurns: z.coerce.number().int().min(0).default(10_000),
  /** At shutdown, how long a worker lets running turns finish before handing them back. */
  shutdownGraceMs: z.coerce.number().int().min(0).default(10_000),
  /** How long a finished task (and its replay buffer) stays readable before it expires. */
  retentionSeconds: z.coerce.number().int().min(60).default(604_800),
  logLevel: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  /** Which roles this process runs (the CLI sets it from the command). */
  roles: z
    .object({ gateway: booleanish.default(true), worker: booleanish.default(true) })
    .default({ gateway: true, worker: true }),
});

export type GatewayConfig = z.infer<typeof configSchema>;

/** Environment variable → config key. */
export const ENV_KEYS: Record<string, keyof GatewayConfig> = {
  A2A_REDIS_URL: 'redisUrl',
  A2A_KEY_PREFIX: 'keyPrefix',
  A2A_HOST: 'host',
  A2A_PORT: 'port',
  A2A_PUBLIC_URL: 'publicUrl',
  A2A_AGENT_NAME: 'agentName',
  A2A_AGENT_DESCRIPTION: 'agentDescription',
  A2A_AGENT_VERSION: 'agentVersion',
  A2A_ADAPTER: 'adapter',
  A2A_WORKER_CONCURRENCY: 'workerConcurrency',
  A2A_MAX_TURN_ATTEMPTS: 'maxTurnAttempts',
  A2A_TURN_DEADLINE_MS: 'turnDeadlineMs',
  A2A_LOCK_DURATION_MS: 'lockDurationMs',
  A2A_STALLED_INTERVAL_MS: 'stalledIntervalMs',
  A2A_MAX_BODY_BYTES: 'maxBodyBytes',
  A2A_HEARTBEAT_MS: 'heartbeatMs',
  A2A_BLOCKING_TIMEOUT_MS: 'blockingTimeoutMs',
  A2A_REDIS_OUTAGE_GRACE_MS: 'redisOutageGraceMs',
  A2A_CANCEL_WAIT_MS: 'cancelWaitMs',
  A2A_IDEMPOTENCY_TTL_SECONDS: 'idempotencyTtlSeconds',
  A2A_RETENTION_SECONDS: 'retentionSeconds',
  A2A_SHUTDOWN_GRACE_MS: 'shutdownGraceMs',
  A2A_MAX_QUEUED_TURNS: 'maxQueuedTurns',
  A2A_LOG_LEVEL: 'logLevel',
};
