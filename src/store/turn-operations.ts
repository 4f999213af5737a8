// What a worker holding a task's lease does: take the lease, append events, journal steps,
// charge the budget, finish or hand back the turn. Every write is fenced by the lease generation.
import type { Artifact, JsonObject, JsonValue, Message, StreamResponse, TaskStatus } from '../protocol/types.ts';
import { DIRECT_REPLY_EVENT_METADATA } from '../tasks/direct-reply.ts';
import { cancelStages } from '../telemetry/metrics.ts';
import { pipelineAcrossSlots } from '../redis/cross-slot.ts';
import type { StepRecord, TurnRecord } from './task-records.ts';
import { withArtifactSlicesRead, type LeaseResult } from './lease-reply.ts';
import { StoreRole } from './store-role.ts';
import { taskField, taskItemField } from './task-hash.ts';
import type { PendingArtifactChunk } from './stored-artifacts.ts';
import { artifactsJson, SEGMENT_BYTES } from './artifact-segments.ts';
import { writeSegmented } from './turn-segments.ts';
import {
  acknowledgeCancelScript,
  acquireLeaseScript,
  appendEventsScript,
  chargeBudgetScript,
  finishTurnScript,
  handBackTurnScript,
  releaseLeaseScript,
  renewLeaseScript,
  startStepScript,
  writeAdapterStateScript,
  writeStepScript,
  writeTurnRecordScript,
} from './turn-scripts.ts';
import { DEFAULT_OUTPUT_LIMITS, isOutputLimitName, OutputLimitError, outputBoundArgs, type OutputLimits } from '../limits/output-limits.ts';

export type { LeaseResult, LostWorker } from './lease-reply.ts';

export type FinishResult =
  | { kind: 'stale' }
  /** The event the call said it follows (`follows`) was not stored: nothing changed. */
  | { kind: 'unstored' }
  /** The event the call carried (`carried`) would go past an output bound: nothing changed. */
  | { kind: 'refused'; refusal: OutputLimitError }
  /** `directReply`: the turn's message was kept as the task's direct reply. */
  | { kind: 'done'; eventId: string; directReply: boolean }
  /** `trace`: the W3C trace context of the request whose message waited first; the next turn continues it. */
  | { kind: 'next'; turn: number; turnInputStart: number; input: Message[]; trace?: Record<string, string> };

/** Which event of its turn run an adapter's event is, and what it says: enough to tell whether it was stored. */
export interface EventPlace {
  /** "<turn>.<resumption>": runs of one scope repeat each other; a new scope starts afresh. */
  scope: string;
  /** 1 for the run's first event, 2 for the next, … */
  sequence: number;
  /** Digest of what the event says (without its timestamps and message ids). */
  digest: string;
}

/**
 * An adapter's event a turn's final write carries instead of an append of its own (the run's last,
 * still unsent when the turn ended: src/runtime/turn-write-queue.ts). Stored as appendEvents
 * stores an event, less what a finished turn drops anyway: its place's digest, a pending
 * artifact chunk (the final write stores the artifacts whole), its status (the final one wins).
 */
export interface CarriedEvent {
  /** The StreamResponse as JSON (what the output bounds weigh). */
  json: string;
  /** What the turn may store (default: the settings' defaults), as appendEvents takes it. */
  outputLimits?: OutputLimits;
  /** The artifact chunk the event carries, for limits.maxArtifactBytes. */
  artifactChunk?: { artifactId: string; append: boolean };
}

/** Where an adapter's event stands in its turn run (see appendEvents-4.lua). */
export interface EmitPlace extends EventPlace {
  /** This run already appended an event: it has left the earlier run's prefix, so append always. */
  pastPrefix: boolean;
}

/** A script's refusal of an event past an output bound, as the error the turn fails with. */
function outputLimitErrorOf(reply: { limit: string; bound: number; bytes: number }, taskId: string): OutputLimitError {
  if (!isOutputLimitName(reply.limit)) throw new Error(`a turn script refused an event with an unknown limit ${reply.limit}`);
  return new OutputLimitError(reply.limit, reply.bound, reply.bytes, taskId);
}

/** The field of the emitted digests hash (TaskKeys.emitted) naming the run scope they belong to (appendEvents-4.lua). */
const EMITTED_SCOPE_FIELD = 'scope';

export class StaleLeaseError extends Error {
  constructor(taskId: string) {
    super(`Task ${taskId} is held by a newer lease generation; this worker's write was rejected.`);
    this.name = 'StaleLeaseError';
  }
}

export class TurnOperations extends StoreRole {
  async acquireLease(input: {
    taskId: string;
    ownerKey: string;
    contextId: string;
    workerId: string;
    leaseTtlMs: number;
    /** Deadline of a turn, from its first start (0 = none). */
    turnDeadlineMs?: number;
    /** Past this many attempts the turn is not run again: the answer is `exhausted` (0 or undefined = no limit). */
    maxTurnAttempts?: number;
    /** No queue job carries the run (a turn started where it was accepted): recorded for the reconciler. */
    withoutJob?: boolean;
    now: Date;
  }): Promise<LeaseResult> {
    const result = await this.call(acquireLeaseScript, this.keys.task(input.taskId), {
      workerId: input.workerId,
      leaseTtlMs: input.leaseTtlMs,
      nowMs: input.now.getTime(),
      nowIso: input.now.toISOString(),
      eventChannel: this.keys.eventChannel(input.taskId),
      turnDeadlineMs: input.turnDeadlineMs,
      maxTurnAttempts: input.maxTurnAttempts,
      artifactsInlineBytes: SEGMENT_BYTES,
      withoutJob: input.withoutJob,
    });
    if (result.kind !== 'acquired') return result;
    return this.acquired(await withArtifactSlicesRead(this.redis, this.keys.task(input.taskId), result), input);
  }

  private acquired(result: Extract<LeaseResult, { kind: 'acquired' }>, input: { taskId: string; ownerKey: string; contextId: string; now: Date }): LeaseResult {
    this.recentTasks.note(input.taskId, input.now.getTime());
    // The turn started here (its WORKING status carries this call's time): the owner's indexes follow.
    if (result.status.state === 'TASK_STATE_WORKING' && result.status.timestamp === input.now.toISOString()) {
      this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime());
    }
    return result;
  }

  /** Gives the lease up (at shutdown) so the next worker need not wait for it to lapse. */
  async releaseLease(taskId: string, workerId: string, generation: number): Promise<void> {
    // A refusal needs no answer: the lease is someone else's, and stays theirs.
    await this.call(releaseLeaseScript, this.keys.task(taskId), { generation, workerId });
  }

  /**
   * Hands a running turn back at shutdown (see handBackTurn-3.lua): undoes its attempt, counts
   * the hand-back, stores the turn record and releases the lease. False when a newer lease
   * generation holds the task (nothing changed).
   */
  async handBackTurn(taskId: string, workerId: string, generation: number, record: TurnRecord): Promise<boolean> {
    return (await this.call(handBackTurnScript, this.keys.task(taskId), { generation, workerId, record })) === 'HANDED_BACK';
  }

  /** Adds a charge to the running turn's budget total; returns the new total. Fenced. */
  async chargeBudget(taskId: string, generation: number, units: number): Promise<number> {
    const reply = await this.call(chargeBudgetScript, this.keys.task(taskId), { generation, units });
    if (reply.outcome === 'STALE') throw new StaleLeaseError(taskId);
    return reply.total;
  }

  async renewLease(taskId: string, workerId: string, leaseTtlMs: number): Promise<void> {
    await this.call(renewLeaseScript, this.keys.task(taskId), { workerId, leaseTtlMs });
  }

  /**
   * Stores and announces events of a running turn (fenced). An adapter's event carries its
   * place in the run (`emit`): an earlier run of the same turn that already appended the same
   * content there makes this a no-op that returns `repeated` (see appendEvents-4.lua).
   */
  async appendEvents(input: {
    taskId: string;
    ownerKey: string;
    contextId: string;
    generation: number;
    /**
     * The whole artifacts, a compaction: they replace the stored snapshot and its pending chunks
     * (undefined: unchanged). Past one segment they are written after the event, in segments
     * (turn-segments.ts), and need `pendingArtifact` too: the chunk is stored pending first.
     */
    artifacts: Artifact[] | undefined;
    /** One artifact chunk to keep beside the snapshot (readers merge it), instead of re-writing the snapshot (ignored when `artifacts` fit one segment). */
    pendingArtifact?: PendingArtifactChunk;
    status: TaskStatus | undefined;
    events: StreamResponse[];
    emit?: EmitPlace;
    /** What the turn may store (default: the settings' defaults); past a bound nothing is stored and OutputLimitError is thrown. */
    outputLimits?: OutputLimits;
    /** The artifact chunk the events carry, for limits.maxArtifactBytes (undefined: no artifact chunk). */
    artifactChunk?: { artifactId: string; append: boolean };
    now: Date;
  }): Promise<{ kind: 'appended'; eventId: string } | { kind: 'repeated' }> {
    const { emit } = input;
    // A compaction too large for one call: the chunk is stored pending, then the snapshot in segments.
    const compaction = artifactsJson(input.artifacts);
    const segmented = compaction?.segmented === true;
    if (segmented && input.pendingArtifact === undefined) throw new Error('a compaction past one segment needs the chunk it goes with (pendingArtifact)');
    const reply = await this.call(appendEventsScript, this.keys.task(input.taskId), {
      generation: input.generation,
      eventChannel: this.keys.eventChannel(input.taskId),
      nowMs: input.now.getTime(),
      taskId: input.taskId,
      artifacts: segmented ? undefined : compaction?.json,
      pendingArtifact: compaction === undefined || segmented ? input.pendingArtifact : undefined,
      status: input.status,
      state: input.status?.state,
      emitScope: emit?.scope,
      emitSequence: emit?.sequence,
      emitDigest: emit?.digest,
      pastPrefix: emit?.pastPrefix,
      events: input.events,
      outputBounds: outputBoundArgs(input.outputLimits ?? DEFAULT_OUTPUT_LIMITS, input.artifactChunk),
    });
    if (reply.outcome === 'STALE') throw new StaleLeaseError(input.taskId);
    if (reply.outcome === 'REPEATED') return { kind: 'repeated' };
    if (reply.outcome === 'LIMIT') throw outputLimitErrorOf(reply, input.taskId);
    if (segmented && (await writeSegmented(this.run, this.keys.task(input.taskId), input.generation, compaction.json)) === 'stale') {
      throw new StaleLeaseError(input.taskId);
    }
    if (input.status !== undefined) {
      this.recentTasks.note(input.taskId, input.now.getTime());
      this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime());
    }
    return { kind: 'appended', eventId: reply.eventId };
  }

  /**
   * True when an earlier run of the turn stored an event with this content at this place (the
   * digests appendEvents keeps): a plain read, so a re-run skips a repeat without building or
   * sending it. Only the lease holder writes the digests, so the answer holds until it writes;
   * appendEvents checks again either way.
   */
  async wasEmitted(taskId: string, emit: EventPlace): Promise<boolean> {
    const [scope, digest] = await this.redis.hmget(this.keys.task(taskId).emitted, EMITTED_SCOPE_FIELD, String(emit.sequence));
    return scope === emit.scope && digest === emit.digest;
  }

  async finishTurn(input: {
    taskId: string;
    ownerKey: string;
    contextId: string;
    generation: number;
    status: TaskStatus;
    agentMessage: Message | undefined;
    turnRecord: TurnRecord;
    /** The whole artifacts (the pending chunks go); undefined: the stored snapshot and pending chunks stay as they are. */
    artifacts: Artifact[] | undefined;
    /** Metadata of the final status update (e.g. the cancellation stage it completes). */
    eventMetadata?: JsonObject;
    /** Whether a terminal result was verified, and how (invariant 8). */
    outcome?: JsonObject;
    /** The turn stopped because a new message interrupted it: the next turn starts at once. */
    interrupted?: boolean;
    /**
     * The agent answered with a direct Message (spec 3.1.1): kept as the task's reply when the
     * client cannot hold the task yet (see finishTurn-10.lua), else the task just completes.
     */
    directReply?: Message;
    /**
     * The run's last event, when this call goes out before that event's append has answered (on
     * the same connection, so behind it): the turn ends only if that event was stored.
     */
    follows?: EventPlace;
    /** The run's last event, stored by this call before its final status (see CarriedEvent). */
    carried?: CarriedEvent;
    now: Date;
  }): Promise<FinishResult> {
    const k = this.keys.task(input.taskId);
    const finalEvent: StreamResponse = {
      statusUpdate: { taskId: input.taskId, contextId: input.contextId, status: input.status },
    };
    if (input.eventMetadata !== undefined) finalEvent.statusUpdate.metadata = input.eventMetadata;
    const directEvent: StreamResponse = {
      statusUpdate: { ...finalEvent.statusUpdate, metadata: { ...input.eventMetadata, ...DIRECT_REPLY_EVENT_METADATA } },
    };
    // Artifacts past one segment are written before, in segments; the script then leaves them be.
    const artifacts = artifactsJson(input.artifacts);
    if (artifacts?.segmented === true && (await writeSegmented(this.run, k, input.generation, artifacts.json)) === 'stale') return { kind: 'stale' };
    const reply = await this.call(finishTurnScript, k, {
      generation: input.generation,
      eventChannel: this.keys.eventChannel(input.taskId),
      nowMs: input.now.getTime(),
      nowIso: input.now.toISOString(),
      taskId: input.taskId,
      state: input.status.state,
      status: input.status,
      agentMessage: input.agentMessage,
      turnRecord: input.turnRecord,
      artifacts: artifacts?.segmented === true ? undefined : artifacts?.json,
      finalEvent,
      retentionSeconds: this.retentionSeconds,
      outcome: input.outcome,
      tokens: input.turnRecord.usage === undefined ? undefined : `${input.turnRecord.usage.inputTokens} ${input.turnRecord.usage.outputTokens}`,
      interrupted: input.interrupted,
      directReply: input.directReply,
      directEvent: input.directReply === undefined ? undefined : directEvent,
      expectEmitted: input.follows === undefined ? undefined : `${input.follows.scope} ${input.follows.sequence} ${input.follows.digest}`,
      carriedEvent: input.carried?.json,
      outputBounds: outputBoundArgs(input.carried?.outputLimits ?? DEFAULT_OUTPUT_LIMITS, input.carried?.artifactChunk),
    });
    if (reply.outcome === 'STALE') return { kind: 'stale' };
    if (reply.outcome === 'UNSTORED') return { kind: 'unstored' };
    if (reply.outcome === 'LIMIT') return { kind: 'refused', refusal: outputLimitErrorOf(reply, input.taskId) };
    this.recentTasks.note(input.taskId, input.now.getTime());
    // Step 3: the owner's indexes move forward; with no turn following, the task leaves the active set.
    this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime(), reply.outcome === 'DONE' ? input.now.getTime() : undefined);
    if (reply.outcome === 'DONE') return { kind: 'done', eventId: reply.eventId, directReply: reply.directReply };
    return {
      kind: 'next',
      turn: reply.turn,
      turnInputStart: reply.turnInputStart,
      input: reply.messages.map((m) => JSON.parse(m) as Message),
      ...(reply.trace === '' ? {} : { trace: JSON.parse(reply.trace) as Record<string, string> }),
    };
  }

  /**
   * Stage 2 of a cancellation: the worker running the turn saw the request, to cancel the task
   * or (`interruptedTurn`) to stop that turn for a new message. Fenced.
   */
  async acknowledgeCancel(input: { taskId: string; contextId: string; generation: number; status: TaskStatus; interruptedTurn?: number; now: Date }): Promise<void> {
    const k = this.keys.task(input.taskId);
    const stage: JsonObject =
      input.interruptedTurn === undefined
        ? { stage: 'acknowledged', at: input.now.toISOString() }
        : { stage: 'acknowledged', scope: 'turn', turn: input.interruptedTurn, reason: 'interrupted by a new message', at: input.now.toISOString() };
    const event: StreamResponse = {
      statusUpdate: { taskId: input.taskId, contextId: input.contextId, status: input.status, metadata: { cancellation: stage } },
    };
    const field = input.interruptedTurn === undefined ? taskField.cancelAcknowledgedAtMs : taskItemField('interruptAcknowledged', input.interruptedTurn);
    const reply = await this.call(acknowledgeCancelScript, k, { generation: input.generation, eventChannel: this.keys.eventChannel(input.taskId), nowMs: input.now.getTime(), event, field });
    if (reply === 'STALE') throw new StaleLeaseError(input.taskId);
    if (input.interruptedTurn === undefined) cancelStages.inc({ stage: 'acknowledged' });
  }

  /**
   * Journals a step as started unless the turn already has a record of that name; returns
   * that record when it has (see startStep-2.lua). Fenced.
   */
  async startStep(taskId: string, generation: number, field: string, started: StepRecord): Promise<StepRecord | undefined> {
    const reply = await this.call(startStepScript, this.keys.task(taskId), { generation, field, started });
    if (reply.outcome === 'STALE') throw new StaleLeaseError(taskId);
    return reply.outcome === 'EXISTS' ? reply.record : undefined;
  }

  /** Rewrites a journalled step (result, failure, external reference). Fenced. */
  async writeStep(taskId: string, generation: number, field: string, record: StepRecord): Promise<void> {
    const reply = await this.call(writeStepScript, this.keys.task(taskId), { generation, field, record });
    if (reply === 'STALE') throw new StaleLeaseError(taskId);
  }

  /** The whole step journal of a task, by "<turn>:<name>". */
  async readSteps(taskId: string): Promise<Record<string, StepRecord>> {
    const all = await this.redis.hgetall(this.keys.task(taskId).steps);
    return Object.fromEntries(Object.entries(all).map(([field, json]) => [field, JSON.parse(json) as StepRecord]));
  }

  /** An adapter's value for this task (ctx.adapterState), or undefined. */
  async readAdapterState(taskId: string, key: string): Promise<JsonValue | undefined> {
    const raw = await this.redis.hget(this.keys.task(taskId).task, taskItemField('adapterState', key));
    return raw === null ? undefined : (JSON.parse(raw) as JsonValue);
  }

  /**
   * Stores an adapter's value in the task hash (so it expires with the task), fenced by the
   * lease generation.
   */
  async writeAdapterState(taskId: string, generation: number, key: string, value: JsonValue): Promise<void> {
    const reply = await this.call(writeAdapterStateScript, this.keys.task(taskId), { generation, field: taskItemField('adapterState', key), value });
    if (reply === 'STALE') throw new StaleLeaseError(taskId);
  }

  /** Record the turn's progress (attempt, steps) without an event; fenced like every write. */
  async writeTurnRecord(taskId: string, generation: number, record: TurnRecord): Promise<void> {
    const reply = await this.call(writeTurnRecordScript, this.keys.task(taskId), { generation, turn: record.turn, record });
    if (reply === 'STALE') throw new StaleLeaseError(taskId);
  }

  async readTurnRecords(taskId: string): Promise<TurnRecord[]> {
    const all = await this.redis.hgetall(this.keys.task(taskId).turns);
    return Object.values(all)
      .map((json) => JSON.parse(json) as TurnRecord)
      .sort((a, b) => a.turn - b.turn);
  }

  /**
   * The messages of a context's tasks created before `taskId`, oldest first (ctx.contextHistory).
   * Sub-agents' tasks are the coordinators' own business and are left out. Reads the context's
   * most recently updated tasks only, so a huge context costs a bounded amount.
   */
  async readContextHistory(ownerKey: string, contextId: string, taskId: string, maxTasks: number): Promise<Message[]> {
    const recent = await this.redis.zrevrange(this.keys.ownerContextTasks(ownerKey, contextId), 0, maxTasks * 4 - 1);
    // Task ids are ULIDs: their order is their creation order.
    const earlier = recent.filter((id) => id < taskId).sort();
    if (earlier.length === 0) return [];
    const grouped = await pipelineAcrossSlots(this.redis, earlier.map((id) => this.keys.task(id).task), (pipeline, i) => {
      const k = this.keys.task(earlier[i] as string);
      pipeline.hmget(k.task, taskField.owner, taskField.parentTaskId);
      pipeline.lrange(k.history, 0, -1);
    });
    const replies = grouped.flat();
    const histories: Message[][] = [];
    for (let i = 0; i < earlier.length; i++) {
      const [owner, parentTaskId] = (replies[i * 2]?.[1] ?? []) as (string | null)[];
      if (owner !== ownerKey || (parentTaskId !== null && parentTaskId !== undefined)) continue;
      histories.push(((replies[i * 2 + 1]?.[1] ?? []) as string[]).map((m) => JSON.parse(m) as Message));
    }
    return histories.slice(-maxTasks).flat();
  }
}
