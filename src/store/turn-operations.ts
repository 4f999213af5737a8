// What a worker holding a task's lease does: take the lease, append events, journal steps,
// charge the budget, finish or hand back the turn. Every write is fenced by the lease generation.
import type { Artifact, JsonObject, JsonValue, Message, StreamResponse, TaskState, TaskStatus } from '../protocol/types.ts';
import { DIRECT_REPLY_EVENT_METADATA } from '../tasks/direct-reply.ts';
import { cancelStages } from '../telemetry/metrics.ts';
import { pipelineAcrossSlots } from '../redis/cross-slot.ts';
import type { StepRecord, TaskLinks, TaskVersions, TurnRecord } from './task-records.ts';
import { str } from './script-reply.ts';
import { StoreRole } from './store-role.ts';
import { taskField, taskItemField } from './task-hash.ts';
import { parseStoredArtifacts, type PendingArtifactChunk } from './stored-artifacts.ts';
import { DEFAULT_OUTPUT_LIMITS, isOutputLimitName, OutputLimitError, outputBoundArgs, type OutputLimits } from '../limits/output-limits.ts';

export type LeaseResult =
  | { kind: 'gone' }
  | { kind: 'closed'; state: TaskState }
  | { kind: 'held'; holder: string }
  /** Past maxTurnAttempts: the lease is taken (to fail the turn) but nothing big was read. */
  | {
      kind: 'exhausted';
      generation: number;
      turn: number;
      attempts: number;
      contextId: string;
      lostWorkers: LostWorker[];
      turnRecord: TurnRecord | undefined;
      /** Set on a sub-agent's task: its coordinator learns the turn failed. */
      links: Omit<TaskLinks, 'readOnly'> | undefined;
    }
  | {
      kind: 'acquired';
      generation: number;
      turn: number;
      attempts: number;
      cancelRequestedAtMs: number | undefined;
      status: TaskStatus;
      /** The snapshot with the pending chunks merged (src/store/stored-artifacts.ts). */
      artifacts: Artifact[];
      /** How big the stored snapshot and pending chunks are, for the turn's next compaction. */
      artifactBytes: { snapshot: number; pending: number };
      metadata: JsonObject;
      contextId: string;
      turnInputStart: number;
      turnRecord: TurnRecord | undefined;
      versions: TaskVersions | undefined;
      /** When this turn must end (fixed at its first start), if it has a deadline. */
      deadlineAtMs: number | undefined;
      /** Units the turn spent so far, whichever workers spent them. */
      budgetSpent: number;
      /** Times the turn was handed back at a worker's shutdown. */
      handBacks: number;
      /** Set on a sub-agent's task: its role, its coordinator, and whether it may only read. */
      links: TaskLinks | undefined;
      /** How often this turn was woken after parking for its assignments (a lost worker's replacement keeps its run's count). */
      resumption: number;
      /** The turn was parked for its assignments at least once: this run continues it. */
      resumed: boolean;
      /** A new message asked this turn to stop (input policy interrupt): it ends at once, the next turn takes over. */
      interrupted: boolean;
      /** The scopes the credentials of the task's latest input granted. */
      callerScopes: string[];
      /** The extensions the request of the task's latest input activated. */
      callerExtensions: string[];
      history: Message[];
    };

/** A worker that stopped renewing a turn's lease (killed, hung, cut off) before the turn ended. */
export interface LostWorker {
  workerId: string;
  turn: number;
  /** The attempt it was running. */
  attempt: number;
  /** When the next attempt took over. */
  atMs: number;
}

export type FinishResult =
  | { kind: 'stale' }
  /** `directReply`: the turn's message was kept as the task's direct reply. */
  | { kind: 'done'; eventId: string; directReply: boolean }
  /** `trace`: the W3C trace context of the request whose message waited first; the next turn continues it. */
  | { kind: 'next'; turn: number; turnInputStart: number; input: Message[]; trace?: Record<string, string> };

/** Where an adapter's event stands in its turn run (see appendEvents-4.lua). */
export interface EmitPlace {
  /** "<turn>.<resumption>": runs of one scope repeat each other; a new scope starts afresh. */
  scope: string;
  /** 1 for the run's first event, 2 for the next, … */
  sequence: number;
  /** Digest of what the event says (without its timestamps and message ids). */
  digest: string;
  /** This run already appended an event: it has left the earlier run's prefix, so append always. */
  pastPrefix: boolean;
}

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
    now: Date;
  }): Promise<LeaseResult> {
    const k = this.keys.task(input.taskId);
    const reply = await this.run(
      'acquireLease',
      [
        k.task,
        k.lease,
        k.history,
        k.events,
        k.turns,
        k.artifactChunks,
        k.pushCursors,
      ],
      [input.workerId, input.leaseTtlMs, input.now.getTime(), input.now.toISOString(), this.keys.eventChannel(input.taskId), input.turnDeadlineMs ?? 0, input.maxTurnAttempts ?? 0],
    );
    switch (reply[0]) {
      case 'EXHAUSTED': {
        const [, generation, turn, attempts, contextId, lostWorkers, turnRecord, role, parentTaskId] = reply.map(str);
        return {
          kind: 'exhausted',
          generation: Number(generation),
          turn: Number(turn),
          attempts: Number(attempts),
          contextId: contextId as string,
          lostWorkers: JSON.parse(lostWorkers || '[]') as LostWorker[],
          turnRecord: turnRecord ? (JSON.parse(turnRecord) as TurnRecord) : undefined,
          links: parentTaskId ? { parentTaskId, role: role as string } : undefined,
        };
      }
      case 'GONE':
        return { kind: 'gone' };
      case 'CLOSED':
        return { kind: 'closed', state: str(reply[1]) as TaskState };
      case 'HELD':
        return { kind: 'held', holder: str(reply[1]) };
      default: {
        this.recentTasks.note(input.taskId, input.now.getTime());
        const [, generation, turn, attempts, cancelRequested, status, artifacts, metadata, contextId, start, turnRecord, versions, deadline, budgetSpent, handBacks, role, parentTaskId, readOnly, resumption, interrupted, callerScopes, callerExtensions, ...history] =
          reply.map(str);
        const parsedStatus = JSON.parse(status as string) as TaskStatus;
        const stored = parseStoredArtifacts(artifacts);
        // The turn started here (its WORKING status carries this call's time): the owner's indexes follow.
        if (parsedStatus.state === 'TASK_STATE_WORKING' && parsedStatus.timestamp === input.now.toISOString()) {
          this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime());
        }
        return {
          kind: 'acquired',
          generation: Number(generation),
          turn: Number(turn),
          attempts: Number(attempts),
          cancelRequestedAtMs: cancelRequested ? Number(cancelRequested) : undefined,
          status: parsedStatus,
          artifacts: stored.artifacts,
          artifactBytes: { snapshot: stored.snapshotBytes, pending: stored.pendingBytes },
          metadata: JSON.parse(metadata || '{}') as JsonObject,
          contextId: contextId as string,
          turnInputStart: Number(start),
          turnRecord: turnRecord ? (JSON.parse(turnRecord) as TurnRecord) : undefined,
          versions: versions ? (JSON.parse(versions) as TaskVersions) : undefined,
          deadlineAtMs: deadline ? Number(deadline) : undefined,
          budgetSpent: Number(budgetSpent || 0),
          handBacks: Number(handBacks || 0),
          links: parentTaskId ? { parentTaskId, role: role as string, readOnly: readOnly === '1' } : undefined,
          resumption: Number(resumption || 0),
          interrupted: interrupted === '1',
          callerScopes: JSON.parse(callerScopes || '[]') as string[],
          callerExtensions: JSON.parse(callerExtensions || '[]') as string[],
          resumed: Number(resumption || 0) > 0,
          history: history.map((m) => JSON.parse(m) as Message),
        };
      }
    }
  }

  /** Gives the lease up (at shutdown) so the next worker need not wait for it to lapse. */
  async releaseLease(taskId: string, workerId: string, generation: number): Promise<void> {
    const k = this.keys.task(taskId);
    // A refusal needs no answer: the lease is someone else's, and stays theirs.
    await this.run('releaseLease', [k.task, k.lease], [generation, workerId]);
  }

  /**
   * Hands a running turn back at shutdown (see handBackTurn-3.lua): undoes its attempt, counts
   * the hand-back, stores the turn record and releases the lease. False when a newer lease
   * generation holds the task (nothing changed).
   */
  async handBackTurn(taskId: string, workerId: string, generation: number, record: TurnRecord): Promise<boolean> {
    const k = this.keys.task(taskId);
    const reply = await this.run('handBackTurn', [k.task, k.lease, k.turns], [generation, workerId, JSON.stringify(record)]);
    return reply[0] === 'HANDED_BACK';
  }

  /** Adds a charge to the running turn's budget total; returns the new total. Fenced. */
  async chargeBudget(taskId: string, generation: number, units: number): Promise<number> {
    const reply = await this.run('chargeBudget', [this.keys.task(taskId).task], [generation, units]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(taskId);
    return Number(reply[1]);
  }

  async renewLease(taskId: string, workerId: string, leaseTtlMs: number): Promise<void> {
    await this.run('renewLease', [this.keys.task(taskId).lease], [workerId, leaseTtlMs]);
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
    /** The whole artifacts, a compaction: they replace the stored snapshot and its pending chunks (undefined: unchanged). */
    artifacts: Artifact[] | undefined;
    /** One artifact chunk to keep beside the snapshot (readers merge it), instead of re-writing the snapshot. */
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
    const k = this.keys.task(input.taskId);
    const { emit } = input;
    const reply = await this.run(
      'appendEvents',
      [k.task, k.events, k.emitted, k.artifactChunks, k.pushCursors],
      [
        input.generation,
        this.keys.eventChannel(input.taskId),
        input.now.getTime(),
        input.taskId,
        input.artifacts === undefined ? '' : JSON.stringify(input.artifacts),
        input.pendingArtifact === undefined ? '' : JSON.stringify(input.pendingArtifact),
        input.status === undefined ? '' : JSON.stringify(input.status),
        input.status?.state ?? '',
        emit?.scope ?? '',
        emit?.sequence ?? 0,
        emit?.digest ?? '',
        emit?.pastPrefix === true ? '1' : '0',
        ...input.events.map((e) => JSON.stringify(e)),
        ...outputBoundArgs(input.outputLimits ?? DEFAULT_OUTPUT_LIMITS, input.artifactChunk),
      ],
    );
    if (reply[0] === 'STALE') throw new StaleLeaseError(input.taskId);
    if (reply[0] === 'REPEATED') return { kind: 'repeated' };
    if (reply[0] === 'LIMIT') {
      const limit = str(reply[1]);
      if (!isOutputLimitName(limit)) throw new Error(`appendEvents refused the event with an unknown limit ${limit}`);
      throw new OutputLimitError(limit, Number(reply[2]), Number(reply[3]), input.taskId);
    }
    if (input.status !== undefined) {
      this.recentTasks.note(input.taskId, input.now.getTime());
      this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime());
    }
    return { kind: 'appended', eventId: str(reply[1]) };
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
    const reply = await this.run(
      'finishTurn',
      [k.task, k.events, k.history, k.inbox, k.lease, k.turns, k.messageIds, k.steps, k.emitted, k.artifactChunks, k.pushCursors],
      [
        input.generation,
        this.keys.eventChannel(input.taskId),
        input.now.getTime(),
        input.now.toISOString(),
        input.taskId,
        input.status.state,
        JSON.stringify(input.status),
        input.agentMessage === undefined ? '' : JSON.stringify(input.agentMessage),
        JSON.stringify(input.turnRecord),
        input.artifacts === undefined ? '' : JSON.stringify(input.artifacts),
        JSON.stringify(finalEvent),
        this.retentionSeconds,
        input.outcome === undefined ? '' : JSON.stringify(input.outcome),
        input.turnRecord.usage === undefined ? '' : `${input.turnRecord.usage.inputTokens} ${input.turnRecord.usage.outputTokens}`,
        input.interrupted === true ? '1' : '',
        input.directReply === undefined ? '' : JSON.stringify(input.directReply),
        input.directReply === undefined ? '' : JSON.stringify(directEvent),
      ],
    );
    if (reply[0] === 'STALE') return { kind: 'stale' };
    this.recentTasks.note(input.taskId, input.now.getTime());
    // Step 3: the owner's indexes move forward; with no turn following, the task leaves the active set.
    this.ownerIndex.note(input.ownerKey, input.taskId, input.contextId, input.now.getTime(), reply[0] === 'DONE' ? input.now.getTime() : undefined);
    if (reply[0] === 'DONE') return { kind: 'done', eventId: str(reply[1]), directReply: reply[2] === 'DIRECT' };
    const [, turn, start, trace, ...messages] = reply.map(str);
    return {
      kind: 'next',
      turn: Number(turn),
      turnInputStart: Number(start),
      input: messages.map((m) => JSON.parse(m) as Message),
      ...(trace === '' || trace === undefined ? {} : { trace: JSON.parse(trace) as Record<string, string> }),
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
    const reply = await this.run('acknowledgeCancel', [k.task, k.events, k.pushCursors], [input.generation, this.keys.eventChannel(input.taskId), input.now.getTime(), JSON.stringify(event), field]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(input.taskId);
    if (input.interruptedTurn === undefined) cancelStages.inc({ stage: 'acknowledged' });
  }

  /**
   * Journals a step as started unless the turn already has a record of that name; returns
   * that record when it has (see startStep-2.lua). Fenced.
   */
  async startStep(taskId: string, generation: number, field: string, started: StepRecord): Promise<StepRecord | undefined> {
    const k = this.keys.task(taskId);
    const reply = await this.run('startStep', [k.task, k.steps], [generation, field, JSON.stringify(started)]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(taskId);
    return reply[0] === 'EXISTS' ? (JSON.parse(str(reply[1])) as StepRecord) : undefined;
  }

  /** Rewrites a journalled step (result, failure, external reference). Fenced. */
  async writeStep(taskId: string, generation: number, field: string, record: StepRecord): Promise<void> {
    const k = this.keys.task(taskId);
    const reply = await this.run('writeStep', [k.task, k.steps], [generation, field, JSON.stringify(record)]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(taskId);
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
    const reply = await this.run('writeAdapterState', [this.keys.task(taskId).task], [generation, taskItemField('adapterState', key), JSON.stringify(value)]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(taskId);
  }

  /** Record the turn's progress (attempt, steps) without an event; fenced like every write. */
  async writeTurnRecord(taskId: string, generation: number, record: TurnRecord): Promise<void> {
    const k = this.keys.task(taskId);
    const reply = await this.run('writeTurnRecord', [k.task, k.turns], [generation, record.turn, JSON.stringify(record)]);
    if (reply[0] === 'STALE') throw new StaleLeaseError(taskId);
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
