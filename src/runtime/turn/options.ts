// What a turn runner is built with, and what every step of a turn shares with it.
import type { AssignmentStore } from '../../store/assignments/assignment-store.ts';
import type { Delegator } from '../../coordination/delegator.ts';
import type { Agents } from '../../agents/agents.ts';
import type { ByteRates } from '../../limits/byte-rates.ts';
import type { ConsumerMeters } from '../../consumers/consumer-meter.ts';
import type { Logger } from '../../logging/logger.ts';
import type { TaskWriteAck } from '../../store/task-write-ack.ts';
import type { TaskStore } from '../../store/task-store.ts';
import type { RunningShare } from '../../../queues/running-share.ts';

export interface TurnRunnerOptions {
  store: TaskStore;
  /** The agents whose turns this runner may run: a task's owner names its agent, whose adapter (or role adapter) runs it under its limits. */
  agents: Agents;
  logger: Logger;
  maxTurnAttempts: number;
  /** Lease time-to-live; kept below BullMQ's lock so a dead worker's lease is gone before its job is re-run. */
  leaseTtlMs: number;
  /** Sub-agent coordination; without it ctx.delegate refuses. */
  coordination?: { delegator: Delegator; assignments: AssignmentStore; retentionSeconds: number };
  /** Running slots per owner and tenant, shared by every worker; undefined = no caps. */
  runningShare?: RunningShare;
  /**
   * redisWaitReplicas: replicas confirm a turn's final state before the turn's job is let go. A
   * refusal fails the job, which BullMQ runs again: it finds the turn finished, or, when the
   * finish was lost in a failover, runs the turn again (its steps journal keeps side effects once).
   */
  replicaAck?: TaskWriteAck;
  /** Owners' output rates (limits.outputBytesPerSecond); undefined = output is not paced. */
  byteRates?: ByteRates;
  /** Consumers' token and spend budgets (src/consumers); undefined = not metered. */
  consumerMeters?: ConsumerMeters;
}

/** The runner as the steps of a turn see it: its options, and the worker id its leases are taken under. */
export interface TurnRunnerSetup {
  readonly options: TurnRunnerOptions;
  readonly workerId: string;
}
