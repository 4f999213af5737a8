// The BullMQ queues that carry turns from gateways to workers, one per agent: an agent's
// backlog (a slow model, a rate-limited remote agent) never holds up another agent's turns, each
// agent has its own worker concurrency, and a worker process may serve only some agents
// (workerAgents). A job names a task whose turn is open; the worker that takes it advances the
// task until no turn is open. BullMQ's stall detection hands a job whose worker died to another
// worker; the task's lease and turn record (not the job) carry attempts and progress. A new task's
// first turn that starts in the process that accepted it has no job (LocalTurnStarter below,
// src/runtime/local-turns.ts): it goes to the queue only if that run stops short.
import { Queue, Worker, type Job } from 'bullmq';
import { isCluster, type RedisClient } from '../src/redis/connection.ts';
import { bullmqTelemetry } from '../src/telemetry/tracing.ts';
import { IDLE_DRAIN_DELAY_SECONDS } from './idle-fetch.ts';
import { traceCarrier, withActive, type TraceContext } from '../src/telemetry/spans.ts';
import { ownerFromKey, type LeaseResult, type LeaseTerms } from '../src/store/task-store.ts';
import { TenantShare } from './tenant-share.ts';

export interface TurnJobData {
  taskId: string;
  /** The turn that was opened when this job was enqueued. */
  turn: number;
  /** The task's owner key: its agent, tenant and principal. */
  ownerKey: string;
  contextId: string;
  /**
   * The W3C trace context (traceparent, tracestate) of whatever opened the turn, while tracing is
   * on: the worker's turn span continues that trace. A follow-up turn the same job goes on to
   * continues the trace of the request that sent its message instead (TurnOperations.finishTurn).
   */
  trace?: Record<string, string>;
}

/** A new task's first turn, as the gateway hands it over. */
export interface LocalTurn {
  data: TurnJobData;
  /** The accepting request's trace context: the turn's span continues it. */
  trace: TraceContext;
  /** The owner's tasks queued or running: the priority of the job, should the turn go to the queue after all. */
  ownerActiveTasks: number;
  /** The lease the task's create took on the slot's `leaseTerms`; undefined: the run takes it. */
  lease?: LeaseResult;
}

/**
 * A place on a worker of the accepting process for one turn (a new task's first, or the one a
 * follow-up opened): held from the take, or, for a caller that follows its turn, waited for in
 * line once the message is stored.
 */
export interface LocalTurnSlot {
  /**
   * The terms on which the task's create (createTask's takeLease), or the accept of the message
   * that resumes it (acceptMessage's), takes the turn's lease for this process's worker, saving the
   * run a script and a round trip; undefined: the run takes it. The turn is registered for cancels already, so one published once the create ran is seen.
   */
  readonly leaseTerms: LeaseTerms | undefined;
  /** Runs the turn here (once a place is its own); the place is the turn's until it ends. Without one in time, the turn goes to the queue. */
  start(turn: LocalTurn): void;
  /** Gives the place back (or leaves the line) when no turn was started on it (the task was not created); a no-op after start. */
  release(): void;
}

/** Where a gateway starts a new task's first turn at once, in its own process (src/runtime/local-turns.ts). */
export interface LocalTurnStarter {
  /** Whether this process runs the agent's turns and has a free place for one now (no job waiting for one). */
  hasPlace(agent: string): boolean;
  /**
   * A place for the turn of the owner's task `taskId` (a new task's first: taken before its
   * create; a follow-up's: before its accept); undefined: the turn goes to the queue. `waitMs` 0: a
   * place free now, taken at once. Otherwise, when the line moves (TurnSlots.moving), one waited
   * for once the message is stored (start()), at most `waitMs` and as long as the line keeps moving.
   */
  take(ownerKey: string, taskId: string, waitMs: number): Promise<LocalTurnSlot | undefined>;
}

/** BullMQ queue name of an agent's turns. */
export const turnQueueName = (agent: string): string => `turns-${agent}`;

/** Deterministic job id: enqueueing the same turn twice (a re-sent message) adds one job. */
export const turnJobId = (taskId: string, turn: number): string => `${taskId}-t${turn}`;

/**
 * BullMQ key prefix of an agent's turn queue. A queue's scripts touch all its keys at once, so
 * on a Redis Cluster they must share a slot: the prefix carries a hash tag per agent (each
 * agent's queue may land on another master). A single Redis keeps the untagged prefix, so an
 * existing deployment's queued jobs stay where its workers look.
 */
export const turnQueuePrefix = (keyPrefix: string, agent: string, connection: RedisClient): string =>
  isCluster(connection) ? `${keyPrefix}:{turnq:${agent}}` : keyPrefix;

export function createTurnQueue(connection: RedisClient, prefix: string, agent: string): Queue<TurnJobData> {
  return new Queue<TurnJobData>(turnQueueName(agent), {
    connection,
    prefix: turnQueuePrefix(prefix, agent, connection),
    // Tracing with telemetry.queueSpans: BullMQ's producer and consumer spans.
    telemetry: bullmqTelemetry(),
    defaultJobOptions: {
      removeOnComplete: true,
      removeOnFail: { count: 10_000 },
      // Failures inside a turn are recorded on the task (and the turn's own attempt limit and
      // deadline end it with a reason); a job only throws on infrastructure trouble: RedisClient
      // gone mid-turn, a lease still held by a worker that is winding down, a hand-back at
      // shutdown. A job that gave up would leave its task open for good, so it keeps retrying
      // once a second for ten minutes, which outlasts any Redis restart or lease.
      attempts: 600,
      backoff: { type: 'fixed', delay: 1_000 },
    },
  });
}

/** Every agent's turn queue on one connection, created when first needed. */
export class TurnQueues {
  private readonly queues = new Map<string, Queue<TurnJobData>>();
  private readonly tenantShare: TenantShare;

  constructor(
    private readonly connection: RedisClient,
    private readonly prefix: string,
    private readonly onError: (error: Error) => void = () => undefined,
  ) {
    this.tenantShare = new TenantShare(connection, prefix);
  }

  /** The queue of an agent's turns. */
  of(agent: string): Queue<TurnJobData> {
    let queue = this.queues.get(agent);
    if (queue === undefined) {
      queue = createTurnQueue(this.connection, this.prefix, agent);
      queue.on('error', this.onError);
      this.queues.set(agent, queue);
    }
    return queue;
  }

  /** The queue a task's turns go to (its owner key names its agent). */
  forOwner(ownerKey: string): Queue<TurnJobData> {
    return this.of(ownerFromKey(ownerKey).agent);
  }

  /** How many owners of this owner's tenant have turns queued lately, this one included (see tenant-share.ts). */
  tenantBusyOwners(ownerKey: string): Promise<number> {
    return this.tenantShare.busyOwners(ownerKey);
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queue) => queue.close().catch(() => undefined)));
  }
}

/** BullMQ's lowest priority (the highest number it takes). */
const LOWEST_PRIORITY = 2 ** 21 - 1;

/**
 * A turn's place among waiting turns: its owner's count of tasks queued or running when it was
 * enqueued, times the number of its tenant's owners busy then. An owner with one task goes ahead
 * of the hundredth task of an owner flooding the queue, and a tenant's one owner goes ahead of
 * the queued part of another tenant's hundred owners, so neither one owner's backlog nor one
 * tenant's crowd starves the others (same priority: first in, first out). Every turn has one:
 * BullMQ runs jobs without a priority before all prioritized ones.
 */
export function turnPriority(ownerActiveTasks: number, tenantBusyOwners = 1): number {
  const place = Math.max(1, Math.floor(ownerActiveTasks)) * Math.max(1, Math.floor(tenantBusyOwners));
  return Math.min(LOWEST_PRIORITY, place);
}

/** A job's data carrying `trace` (the context of whatever opens the turn); without one, the carrier `data` has, if any. */
export function withTrace(data: TurnJobData, trace: TraceContext): TurnJobData {
  const carried = traceCarrier(trace);
  return carried === undefined ? data : { ...data, trace: carried };
}

export async function enqueueTurn(queues: TurnQueues, data: TurnJobData, trace: TraceContext, ownerActiveTasks = 1): Promise<void> {
  const queue = queues.forOwner(data.ownerKey);
  const busyOwners = await queues.tenantBusyOwners(data.ownerKey);
  // Active for BullMQ's producer span (telemetry.queueSpans); the job's data carries it either way.
  await withActive(trace, () =>
    queue.add('turn', withTrace(data, trace), { jobId: turnJobId(data.taskId, data.turn), priority: turnPriority(ownerActiveTasks, busyOwners) }),
  );
}

export function createTurnWorker(options: {
  connection: RedisClient;
  prefix: string;
  agent: string;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  maxStalledCount: number;
  process: (job: Job<TurnJobData>, token?: string) => Promise<void>;
}): Worker<TurnJobData> {
  return new Worker<TurnJobData>(turnQueueName(options.agent), options.process, {
    connection: options.connection,
    telemetry: bullmqTelemetry(),
    prefix: turnQueuePrefix(options.prefix, options.agent, options.connection),
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    drainDelay: IDLE_DRAIN_DELAY_SECONDS,
    maxStalledCount: options.maxStalledCount,
    removeOnComplete: { count: 0 },
  });
}
