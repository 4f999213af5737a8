// What a lease's take answers (include/takeLease.lua: acquireLease-6.lua, and createTask-7.lua
// after its first two values when it takes the first turn's lease), decoded: the lease taken
// (with what the turn needs to run), or why not. LeaseTerms: what it is taken with.
import type { Artifact, JsonObject, Message, TaskState, TaskStatus } from '../protocol/types.ts';
import type { ScriptReply } from './scripts.ts';
import { str } from './script-reply.ts';
import type { RedisClient } from '../redis/connection.ts';
import { artifactSlicesOf, readArtifactSlices, type ArtifactSlices } from './artifact-segments.ts';
import type { TaskKeys } from './keys.ts';
import { parseStoredArtifacts } from './stored-artifacts.ts';
import type { TaskLinks, TaskVersions, TurnRecord } from './task-records.ts';

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
      /** Artifacts too large for the script's reply (artifacts is then []): the store reads them in slices before it answers. */
      artifactSlices?: ArtifactSlices;
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

/** A lease taken: the turn, its attempt and everything its adapter reads. */
export type AcquiredLease = Extract<LeaseResult, { kind: 'acquired' }>;

/** What a lease is taken with: the worker taking it, for how long, and the turn's bounds. */
export interface LeaseTerms {
  workerId: string;
  leaseTtlMs: number;
  /** Deadline of a turn, from its first start (0 = none). */
  turnDeadlineMs: number;
  /** Past this many attempts the turn is not run again (0 = no limit). */
  maxTurnAttempts: number;
}

/** A worker that stopped renewing a turn's lease (killed, hung, cut off) before the turn ended. */
export interface LostWorker {
  workerId: string;
  turn: number;
  /** The attempt it was running. */
  attempt: number;
  /** When the next attempt took over. */
  atMs: number;
}

export function leaseResultOf(reply: ScriptReply): LeaseResult {
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
      const [, generation, turn, attempts, cancelRequested, status, artifacts, metadata, contextId, start, turnRecord, versions, deadline, budgetSpent, handBacks, role, parentTaskId, readOnly, resumption, interrupted, callerScopes, callerExtensions, ...history] =
        reply.map(str);
      const slices = artifactSlicesOf(artifacts);
      const stored = parseStoredArtifacts(slices === undefined ? artifacts : '');
      return {
        kind: 'acquired',
        generation: Number(generation),
        turn: Number(turn),
        attempts: Number(attempts),
        cancelRequestedAtMs: cancelRequested ? Number(cancelRequested) : undefined,
        status: JSON.parse(status as string) as TaskStatus,
        artifacts: stored.artifacts,
        artifactBytes: { snapshot: stored.snapshotBytes, pending: stored.pendingBytes },
        ...(slices === undefined ? {} : { artifactSlices: slices }),
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

/**
 * A lease whose artifacts were too large for the take's reply, with them read in bounded slices
 * (readArtifactSlices: the taker holds the lease, so they stay put); otherwise as it is.
 */
export async function withArtifactSlicesRead(redis: RedisClient, keys: TaskKeys, result: AcquiredLease): Promise<AcquiredLease> {
  if (result.artifactSlices === undefined) return result;
  const { artifactSlices, ...acquired } = result;
  const stored = await readArtifactSlices(redis, keys, artifactSlices);
  return { ...acquired, artifacts: stored.artifacts, artifactBytes: { snapshot: stored.snapshotBytes, pending: stored.pendingBytes } };
}
