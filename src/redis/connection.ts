import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { DEFAULT_REDIS_MAX_COMMAND_BYTES, guardCommands } from './command-guard.ts';
import { leanPipelines } from './lean-pipelines.ts';

export { DEFAULT_REDIS_MAX_COMMAND_BYTES, guardCommands, isRedisCommandTooLargeError, RedisCommandTooLargeError } from './command-guard.ts';

export type RedisRole = 'commands' | 'events' | 'cancel' | 'queue' | 'worker';

/** A connection to a single Redis or to a Redis Cluster: every module takes either. */
export type RedisClient = Redis | Cluster;

/** Where Redis is: a single server at `redisUrl`, or a Cluster found from `redisClusterNodes`. */
export interface RedisTarget {
  redisUrl: string;
  redisClusterNodes: readonly string[];
  /** Largest command (all its arguments) a connection sends; larger are refused before they are queued (default DEFAULT_REDIS_MAX_COMMAND_BYTES). */
  redisMaxCommandBytes?: number;
}

export const isCluster = (redis: RedisClient): redis is Cluster => redis.isCluster;
export const clusterConfigured = (target: RedisTarget): boolean => target.redisClusterNodes.length > 0;

/** Default of `redisOutageGraceMs`: how long a lost Redis connection may take to come back. */
export const DEFAULT_REDIS_OUTAGE_GRACE_MS = 3_000;

/**
 * Raised for commands that waited for a lost Redis connection longer than the outage grace
 * period, and for commands issued after that until Redis is back. Nothing it rejected was
 * sent: the command was dropped from the offline queue, so it cannot run later behind the
 * caller's back.
 */
export class RedisUnavailableError extends Error {
  constructor(
    readonly role: RedisRole,
    readonly downForMs: number,
  ) {
    super(`Redis has been unreachable for ${downForMs} ms (${role} connection); the command was not sent.`);
    this.name = 'RedisUnavailableError';
  }
}

/** True for errors that mean "Redis cannot be reached right now", which a retry may fix. */
export function isRedisConnectionError(error: unknown): boolean {
  if (error instanceof RedisUnavailableError) return true;
  const message = error instanceof Error ? error.message : String(error);
  // "Command aborted": an auto-pipelined batch that was cut off mid-reply by the disconnect.
  // "Command timed out": Redis is connected but does not answer (redisCommandTimeoutMs).
  return /Connection is closed|Command aborted due to connection close|Command timed out|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|MaxRetriesPerRequest|Stream isn't writeable|LOADING/i.test(
    message,
  );
}

/**
 * One place that opens Redis connections, so every role reconnects the same way: with a
 * short backoff (capped at 1 s, so a restarted Redis is found again within a second) and
 * without a cap on retries, because a gateway must survive a Redis restart.
 *
 * `outageGraceMs` (gateway connections that answer clients) bounds how long a command waits
 * for a lost connection. Without it, a command waits for the reconnect however long that
 * takes: right for workers, whose turns should simply carry on once Redis is back.
 *
 * With `redisClusterNodes` set the connection is a Cluster: the same options apply to each
 * node's connection, and both policies to each node (a killed master's commands fail after the
 * grace period, as a lost single Redis's would) and to the Cluster's own offline queue.
 */
export function openRedis(
  target: RedisTarget,
  role: RedisRole,
  extra: RedisOptions = {},
  policy: { outageGraceMs?: number; commandTimeoutMs?: number } = {},
): RedisClient {
  const options: RedisOptions = {
    connectionName: `a2a-gateway:${role}`,
    // BullMQ requires null for its blocking connections; for ours it means a command
    // waits for the reconnect instead of failing after a few retries.
    maxRetriesPerRequest: null,
    retryStrategy: reconnectDelay,
    // Batches the commands issued in one tick into one write; not for blocking connections.
    enableAutoPipelining: role === 'commands' || role === 'queue',
    ...extra,
  };
  const client = clusterConfigured(target) ? openCluster(target, role, options, policy) : openSingle(target, role, options, policy);
  guardCommands(client, target.redisMaxCommandBytes ?? DEFAULT_REDIS_MAX_COMMAND_BYTES);
  leanPipelines(client);
  // Each role logs its connection's errors; this listener only makes sure an 'error' event never
  // finds none (a role that forgot one must not depend on ioredis' own fallback).
  client.on('error', () => undefined);
  return client;
}

function openSingle(target: RedisTarget, role: RedisRole, options: RedisOptions, policy: { outageGraceMs?: number; commandTimeoutMs?: number }): Redis {
  const redis = new Redis(target.redisUrl, options);
  if (policy.outageGraceMs !== undefined) failFastAfterGrace(redis, role, policy.outageGraceMs);
  if (policy.commandTimeoutMs !== undefined) timeOutWhileConnected(redis, policy.commandTimeoutMs);
  return redis;
}

const reconnectDelay = (attempt: number): number => Math.min(attempt * 100, 1_000);

/** How often, and how far apart, a Cluster command is retried while its slot's master is failing over. */
const CLUSTER_MAX_REDIRECTIONS = 64;
const CLUSTER_RETRY_DELAY_MS = 250;

function openCluster(target: RedisTarget, role: RedisRole, options: RedisOptions, policy: { outageGraceMs?: number; commandTimeoutMs?: number }): Cluster {
  // Taken out of the nodes' options: the Cluster decides pipelining (below), the nodes follow it.
  const { enableAutoPipelining: _perNodeAutoPipelining, retryStrategy, ...nodeOptions } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions: { ...credentialsOf(target.redisUrl), ...nodeOptions },
    clusterRetryStrategy: retryStrategy === undefined || retryStrategy === null ? reconnectDelay : (attempt) => retryStrategy(attempt) ?? null,
    // Off on a Cluster, whatever the role asks: ioredis's Cluster auto-pipelining can throw from
    // inside its own callback while slots move ("results[i] is not iterable", ioredis issues
    // 1931 and 2075), an exception no caller can catch, which killed a worker in the hour-long
    // chaos run. Commands still share each node's connection without waiting for each other.
    enableAutoPipelining: false,
    // Subscribers hold one connection per master, each taking the SSUBSCRIBEs of its slots.
    shardedSubscribers: role === 'events' || role === 'cancel',
    // A failover moves slots: look again soon rather than on the next MOVED only.
    slotsRefreshInterval: 2_000,
    // A command to a killed master is retried (closed connection, CLUSTERDOWN) once per delay,
    // each retry spending one redirection. ioredis's 16 × 100 ms gives up after 1.6 s, before
    // any failover ends (cluster-node-timeout, 15 s by default, plus the election): 64 × 250 ms
    // lets a command ride out a failover of up to 16 s instead of failing the turn.
    maxRedirections: CLUSTER_MAX_REDIRECTIONS,
    retryDelayOnFailover: CLUSTER_RETRY_DELAY_MS,
    retryDelayOnClusterDown: CLUSTER_RETRY_DELAY_MS,
  };
  const cluster = new Cluster(target.redisClusterNodes.map(seedOf), clusterOptions);
  cluster.on('+node', (node: Redis) => {
    if (policy.outageGraceMs !== undefined) failFastAfterGrace(node, role, policy.outageGraceMs);
    if (policy.commandTimeoutMs !== undefined) timeOutWhileConnected(node, policy.commandTimeoutMs);
  });
  if (policy.outageGraceMs !== undefined) failClusterFastAfterGrace(cluster, role, policy.outageGraceMs);
  return cluster;
}

function seedOf(entry: string): { host: string; port: number } {
  const colon = entry.lastIndexOf(':');
  return { host: entry.slice(0, colon), port: Number(entry.slice(colon + 1)) };
}

/** What a Cluster's nodes take from `redisUrl`: its user, password and TLS (`rediss:`). */
function credentialsOf(url: string): RedisOptions {
  const parsed = new URL(url);
  return {
    ...(parsed.username === '' ? {} : { username: decodeURIComponent(parsed.username) }),
    ...(parsed.password === '' ? {} : { password: decodeURIComponent(parsed.password) }),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * The Cluster's own offline queue holds commands while no node is known (every seed down, or
 * the slot map being rebuilt); the outage policy applies to it as to a single Redis's queue.
 */
function failClusterFastAfterGrace(cluster: Cluster, role: RedisRole, graceMs: number): void {
  let downSinceMs: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  const flushable = cluster as unknown as { flushQueue(error: Error): void };
  const onDown = (): void => {
    if (downSinceMs !== undefined) return;
    downSinceMs = Date.now();
    timer = setTimeout(() => {
      timer = undefined;
      if (cluster.status === 'ready' || downSinceMs === undefined) return;
      cluster.options.enableOfflineQueue = false;
      flushable.flushQueue(new RedisUnavailableError(role, Date.now() - downSinceMs));
    }, graceMs);
    timer.unref();
  };
  cluster.on('close', onDown);
  cluster.on('reconnecting', onDown);
  cluster.on('ready', () => {
    clearTimeout(timer);
    timer = undefined;
    downSinceMs = undefined;
    cluster.options.enableOfflineQueue = true;
  });
  cluster.on('end', () => clearTimeout(timer));
}

/**
 * A Redis that is connected but does not answer (stopped, swapping, stuck in a slow script)
 * gives no 'close' for the outage policy to act on: commands would wait forever. ioredis'
 * `commandTimeout` rejects a command not answered in time, but it also starts on commands
 * parked in the offline queue, which stay queued and would run after their caller was told
 * they failed. So it is armed only for commands sent while the connection is ready: a lost
 * connection is the outage policy's (failFastAfterGrace), a silent one is this timeout's. A
 * command that timed out was sent and may still run when Redis wakes up; the gateway's writes
 * are idempotent (call ids, messageIds), so a client's retry is safe.
 */
function timeOutWhileConnected(redis: Redis, timeoutMs: number): void {
  // ioredis reads options.commandTimeout as each command is sent; `status` is current at that
  // moment (its events come a tick later), so the choice is exact per command.
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    redis.options.commandTimeout = redis.status === 'ready' ? timeoutMs : undefined;
    return send(...args);
  }) as Redis['sendCommand'];
}

/**
 * Resolves once the connection has passed its ready check. A (P)SUBSCRIBE sent before that
 * can be lost: ioredis writes it as soon as the socket connects, its own ready check is then
 * refused in subscriber mode, and after the reconnect that follows the subscription is gone
 * although the call resolved. Subscribers wait for this first.
 */
export function whenReady(redis: RedisClient): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => redis.once('ready', () => resolve()));
}

/** The ioredis internals the outage policy needs (private in its typings, stable since v4). */
interface QueuedCommand {
  command: { reject(error: Error): void };
}
interface RedisQueues {
  flushQueue(error: Error, options?: { offlineQueue?: boolean; commandQueue?: boolean }): void;
  prevCommandQueue: { length: number; shift(): QueuedCommand | undefined } | null | undefined;
}

/**
 * The outage policy of a connection that answers clients. Why not ioredis' own knobs:
 * - `commandTimeout` rejects the caller but leaves the command in the offline queue, so a
 *   CreateTask the client was told had failed would still run once Redis is back;
 * - `maxRetriesPerRequest: n` flushes the queue every n+1 reconnect attempts, however long
 *   each command had waited: one arriving just before a flush fails at once, even in a blip;
 * - `enableOfflineQueue: false` fails every command issued during the shortest blip.
 * Instead: while the connection is down, commands wait in the offline queue as usual (a blip
 * shorter than `graceMs` is invisible to clients). Once it has been down for `graceMs`, every
 * waiting command, including those sent but unanswered when it dropped, is rejected and
 * removed (so none runs later), and new commands fail at once, until the connection is ready
 * again. A request therefore fails within about `graceMs` of an outage's start, never later.
 */
function failFastAfterGrace(redis: Redis, role: RedisRole, graceMs: number): void {
  let downSinceMs: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  const queues = redis as unknown as RedisQueues;
  const trip = (): void => {
    timer = undefined;
    if (redis.status === 'ready' || downSinceMs === undefined) return;
    const error = new RedisUnavailableError(role, Date.now() - downSinceMs);
    redis.options.enableOfflineQueue = false;
    // Not the command queue: while reconnecting it holds only the handshake (ready check).
    queues.flushQueue(error, { offlineQueue: true, commandQueue: false });
    const unanswered = queues.prevCommandQueue;
    if (unanswered) {
      queues.prevCommandQueue = null;
      for (let item = unanswered.shift(); item !== undefined; item = unanswered.shift()) item.command.reject(error);
    }
  };
  redis.on('close', () => {
    if (downSinceMs !== undefined) return; // every failed reconnect attempt closes again
    downSinceMs = Date.now();
    timer = setTimeout(trip, graceMs);
    timer.unref();
  });
  redis.on('ready', () => {
    clearTimeout(timer);
    timer = undefined;
    downSinceMs = undefined;
    redis.options.enableOfflineQueue = true;
  });
  redis.on('end', () => clearTimeout(timer));
}

/** Resolves when Redis answers PING, or rejects with a message that names the URL and the remedy. */
export async function checkRedisReachable(target: RedisTarget, timeoutMs = 3_000): Promise<void> {
  if (clusterConfigured(target)) return checkClusterReachable(target, timeoutMs);
  const url = target.redisUrl;
  const probe = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
  });
  let cause: Error | undefined;
  probe.on('error', (error: Error) => {
    cause ??= error;
  });
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    throw new Error(
      `Redis is not reachable at ${url} (${(cause ?? (error as Error)).message}). Start it (e.g. \`redis-server --appendonly yes\`) or set A2A_REDIS_URL to a reachable Redis.`,
    );
  } finally {
    probe.disconnect();
  }
}

async function checkClusterReachable(target: RedisTarget, timeoutMs: number): Promise<void> {
  const probe = new Cluster(target.redisClusterNodes.map(seedOf), {
    lazyConnect: true,
    clusterRetryStrategy: () => null,
    redisOptions: { ...credentialsOf(target.redisUrl), connectTimeout: timeoutMs, maxRetriesPerRequest: 0 },
  });
  let cause: Error | undefined;
  probe.on('error', (error: Error) => {
    cause ??= error;
  });
  try {
    await probe.connect();
    const info = await probe.cluster('INFO');
    if (!/cluster_state:ok/.test(String(info))) throw new Error('cluster_state is not ok');
  } catch (error) {
    throw new Error(
      `Redis Cluster is not reachable at ${target.redisClusterNodes.join(',')} (${(cause ?? (error as Error)).message}). Check A2A_REDIS_CLUSTER_NODES names reachable nodes of a cluster whose every slot is served.`,
    );
  } finally {
    probe.disconnect();
  }
}
