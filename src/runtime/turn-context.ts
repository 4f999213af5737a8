// The adapter's context for one turn. It keeps the task's artifacts in memory for this
// worker and writes every change through the store fenced by the lease generation, in the
// order the adapter made them, even when the adapter does not await each call.
import { newId } from '../ids.ts';
import type { AdapterContext, ArtifactChunk, StepHandle, StepOutcome } from '../../adapters/types.ts';
import type { Artifact, JsonObject, JsonValue, Message, StreamResponse, TaskStatus } from '../protocol/types.ts';
import type { StepRecord, TaskStore, TurnRecord } from '../store/task-store.ts';

export interface TurnLease {
  taskId: string;
  contextId: string;
  ownerKey: string;
  generation: number;
}

export function agentMessage(lease: TurnLease, text: string, metadata?: JsonObject): Message {
  const message: Message = {
    messageId: newId(),
    role: 'ROLE_AGENT',
    parts: [{ text }],
    taskId: lease.taskId,
    contextId: lease.contextId,
  };
  if (metadata !== undefined) message.metadata = metadata;
  return message;
}

/** Applies one chunk to the artifact list the way a client applying the events would. */
export function applyArtifactChunk(artifacts: Artifact[], chunk: ArtifactChunk): Artifact {
  const index = artifacts.findIndex((a) => a.artifactId === chunk.artifactId);
  const previous = index >= 0 ? artifacts[index] : undefined;
  const merged: Artifact = {
    artifactId: chunk.artifactId,
    parts: chunk.append === true && previous !== undefined ? [...previous.parts, ...chunk.parts] : [...chunk.parts],
  };
  const name = chunk.name ?? previous?.name;
  if (name !== undefined) merged.name = name;
  const description = chunk.description ?? previous?.description;
  if (description !== undefined) merged.description = description;
  const metadata = chunk.metadata ?? previous?.metadata;
  if (metadata !== undefined) merged.metadata = metadata;
  if (index >= 0) artifacts[index] = merged;
  else artifacts.push(merged);
  return merged;
}

export class TurnContext implements AdapterContext {
  readonly taskId: string;
  readonly contextId: string;
  private writes: Promise<void> = Promise.resolve();
  private writeError: Error | undefined;

  constructor(
    private readonly store: TaskStore,
    private readonly lease: TurnLease,
    readonly turn: number,
    readonly attempt: number,
    readonly input: readonly Message[],
    readonly history: readonly Message[],
    private readonly artifactState: Artifact[],
    readonly requestedSkill: string | undefined,
    readonly signal: AbortSignal,
    readonly turnRecord: TurnRecord,
  ) {
    this.taskId = lease.taskId;
    this.contextId = lease.contextId;
  }

  get artifacts(): readonly Artifact[] {
    return this.artifactState;
  }

  emitStatus(text: string, metadata?: JsonObject): Promise<void> {
    const status: TaskStatus = {
      state: 'TASK_STATE_WORKING',
      message: agentMessage(this.lease, text, metadata),
      timestamp: new Date().toISOString(),
    };
    const event: StreamResponse = { statusUpdate: { taskId: this.taskId, contextId: this.contextId, status } };
    return this.enqueue(() => this.append(undefined, status, event));
  }

  emitArtifact(chunk: ArtifactChunk): Promise<void> {
    if (chunk.parts.length === 0) return Promise.reject(new Error('An artifact chunk needs at least one part.'));
    return this.enqueue(async () => {
      const merged = applyArtifactChunk(this.artifactState, chunk);
      const artifact: Artifact = { ...merged, parts: chunk.parts };
      const event: StreamResponse = {
        artifactUpdate: {
          taskId: this.taskId,
          contextId: this.contextId,
          artifact,
          append: chunk.append === true,
          lastChunk: chunk.lastChunk === true,
        },
      };
      await this.append(this.artifactState, undefined, event);
    });
  }

  recordStep(name: string, detail?: JsonObject): Promise<void> {
    return this.enqueue(async () => {
      const step: NonNullable<TurnRecord['steps']>[number] = { name, atMs: Date.now(), attempt: this.attempt };
      if (detail !== undefined) step.detail = detail;
      (this.turnRecord.steps ??= []).push(step);
      await this.store.writeTurnRecord(this.taskId, this.lease.generation, this.turnRecord);
    });
  }

  async step<T extends JsonValue>(name: string, run: (handle: StepHandle) => Promise<T>): Promise<StepOutcome<T>> {
    if (name === '') throw new Error('A step needs a name, unique within the turn.');
    const field = `${this.turn}:${name}`;
    const record: StepRecord = {
      name,
      turn: this.turn,
      idempotencyKey: `${this.taskId}:${this.turn}:${name}`,
      state: 'started',
      attempt: this.attempt,
      startedAtMs: Date.now(),
    };
    const journalled = await this.enqueueValue(() => this.store.startStep(this.taskId, this.lease.generation, field, record));
    if (journalled !== undefined && journalled.state === 'done') return { status: 'done', value: journalled.value as T, replayed: true };
    if (journalled !== undefined && (journalled.state === 'started' || journalled.state === 'unknown')) {
      if (journalled.state === 'started') {
        // Journal that the unknown was handed over, so operators see it was not forgotten.
        const surfaced: StepRecord = { ...journalled, state: 'unknown', surfacedToAttempt: this.attempt };
        await this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, surfaced));
      }
      return {
        status: 'unknown',
        idempotencyKey: journalled.idempotencyKey,
        reference: journalled.reference,
        startedAt: new Date(journalled.startedAtMs).toISOString(),
      };
    }
    if (journalled !== undefined) {
      // A failed step is known not to have succeeded: this attempt runs it again.
      await this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, record));
    }
    const handle: StepHandle = {
      idempotencyKey: record.idempotencyKey,
      recordReference: (reference) => {
        record.reference = reference;
        return this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, { ...record }));
      },
    };
    let value: T;
    try {
      value = await run(handle);
    } catch (error) {
      const failed: StepRecord = { ...record, state: 'failed', finishedAtMs: Date.now(), error: (error as Error).message ?? String(error) };
      await this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, failed));
      throw error;
    }
    const done: StepRecord = { ...record, state: 'done', finishedAtMs: Date.now(), value };
    await this.enqueue(() => this.store.writeStep(this.taskId, this.lease.generation, field, done));
    return { status: 'done', value, replayed: false };
  }

  /** Stage 2 of a cancellation, ordered after everything the adapter emitted so far. */
  acknowledgeCancel(): Promise<void> {
    return this.enqueue(() =>
      this.store.acknowledgeCancel({
        taskId: this.taskId,
        contextId: this.contextId,
        generation: this.lease.generation,
        status: { state: 'TASK_STATE_WORKING', timestamp: new Date().toISOString() },
        now: new Date(),
      }),
    );
  }

  /** Waits for every write the adapter started; rethrows the first failure (e.g. a stale lease). */
  async settle(): Promise<void> {
    await this.writes;
    if (this.writeError !== undefined) throw this.writeError;
  }

  private enqueueValue<T>(read: () => Promise<T>): Promise<T> {
    let result: T | undefined;
    return this.enqueue(async () => {
      result = await read();
    }).then(() => result as T);
  }

  private enqueue(write: () => Promise<void>): Promise<void> {
    const next = this.writes.then(async () => {
      if (this.writeError !== undefined) throw this.writeError;
      try {
        await write();
      } catch (error) {
        this.writeError ??= error as Error;
        throw error;
      }
    });
    // Keep the chain alive for later writes; the caller still sees this write's failure.
    this.writes = next.catch(() => undefined);
    return next;
  }

  private async append(artifacts: Artifact[] | undefined, status: TaskStatus | undefined, event: StreamResponse): Promise<void> {
    await this.store.appendEvents({
      taskId: this.taskId,
      ownerKey: this.lease.ownerKey,
      contextId: this.contextId,
      generation: this.lease.generation,
      artifacts,
      status,
      events: [event],
      now: new Date(),
    });
  }
}
