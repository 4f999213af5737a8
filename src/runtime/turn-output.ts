// What a turn's run stores as its output: status updates and artifact chunks, each appended to
// the task's events fenced by the lease generation, paced by the owner's output rate, and
// recognized when a re-run of the turn repeats what an earlier run stored. The task's artifacts
// are kept here as the store has them, so the turn can compact them and the adapter can read
// them (ctx.artifacts).
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ArtifactChunk } from '../../adapters/types.ts';
import type { OutputPacer } from '../limits/byte-rates.ts';
import type { OutputLimits } from '../limits/output-limits.ts';
import type { Logger } from '../logging/logger.ts';
import type { Artifact, JsonObject, Part, StreamResponse, TaskStatus } from '../protocol/types.ts';
import { ArtifactMerge, type PendingArtifactChunk } from '../store/stored-artifacts.ts';
import type { EventPlace, TaskStore } from '../store/task-store.ts';
import { addEventsTime, timeNow } from '../telemetry/stage-marks.ts';
import { ArtifactCompaction } from './artifact-compaction.ts';
import type { TurnWriteQueue } from './turn-write-queue.ts';

/** A run's events up to this one are offered to its final write (TurnWriteQueue.offerToFinal); later ones go at once. */
const OFFERED_EVENTS_MAX = 2;
/**
 * Nor is an event of more characters than this offered: carried, it would make the final write a
 * command as large as the event and the artifacts it also stores, which the command size bound
 * (redisMaxCommandBytes) may refuse where the two apart pass; carrying saves a call, not bytes.
 */
const OFFERED_EVENT_MAX_CHARS = 64 * 1024;

/** The parts a run put in an artifact before a chunk, and with it. */
interface OwnParts {
  before: Part[];
  after: Part[];
}

/** An event's place in its run and a digest of what it says. */
interface Place {
  sequence: number;
  digest: string;
}

export interface TurnOutputInit {
  store: TaskStore;
  queue: TurnWriteQueue;
  taskId: string;
  contextId: string;
  ownerKey: string;
  generation: number;
  turn: number;
  attempt: number;
  /** "<turn>.<resumption>": the run this output belongs to (see TurnContextInit.emitScope). */
  emitScope: string;
  /** An earlier run of this emitScope may have stored events (TurnContextInit.mayRepeatEarlierRun). */
  mayRepeatEarlierRun: boolean;
  /** The task's artifacts as stored; updated as chunks are stored. */
  artifacts: Artifact[];
  artifactBytes: { snapshot: number; pending: number } | undefined;
  outputLimits: OutputLimits | undefined;
  outputPacer: OutputPacer | undefined;
  signal: AbortSignal;
  logger: Logger;
}

export class TurnOutput {
  readonly artifacts: Artifact[];
  /** Applies stored chunks to `artifacts` (appends grow an artifact in place: linear in the output). */
  private readonly merge: ArtifactMerge;
  /** When a chunk goes with the whole snapshot instead of beside it. */
  private readonly compaction: ArtifactCompaction;
  /** Events of this run an earlier run had stored already (not stored again). */
  private repeatedEvents = 0;
  /**
   * Parts this run put in each artifact it started with a replacing chunk (a re-run's own view),
   * kept only while the run may still be repeating an earlier one: past that nothing reads them.
   */
  private readonly ownArtifactParts = new Map<string, Part[]>();
  /** Events this run has emitted so far (each one's place in the run). */
  private emitSequence = 0;
  /** This run appended an event: it is past the part that repeats an earlier run. */
  private pastPrefix = false;
  /** The charge of the last output, made after the fact (paceOutput): its debt is waited out before the next. */
  private pendingCharge: Promise<number> | undefined;

  constructor(private readonly init: TurnOutputInit) {
    this.artifacts = init.artifacts;
    this.merge = new ArtifactMerge(this.artifacts);
    this.compaction = new ArtifactCompaction(init.artifactBytes?.snapshot ?? 2, init.artifactBytes?.pending ?? 0);
  }

  emitStatus(status: TaskStatus, text: string, metadata: JsonObject | undefined): Promise<void> {
    const { taskId, contextId } = this.init;
    const event: StreamResponse = { statusUpdate: { taskId, contextId, status } };
    const place = this.nextPlace({ status: text, metadata: metadata ?? null });
    return this.init.queue.enqueueAppend(this.appendPlace(place), async (commandSent) => {
      await this.paceOutput(JSON.stringify(event).length);
      await this.append(commandSent, undefined, status, event, place);
    });
  }

  emitArtifact(chunk: ArtifactChunk): Promise<void> {
    const place = this.nextPlace({ artifact: chunk as unknown as JsonObject });
    return this.init.queue.enqueueAppend(this.appendPlace(place), async (commandSent) => {
      const own = this.noteOwnParts(chunk);
      // A repeat of an earlier run is recognized before the event is built: a re-run's chunk may be
      // sent as the whole artifact so far (asSent), and building and sending it for every repeat
      // would cost the worker and Redis time quadratic in the artifact. A first run has nothing to
      // repeat and skips the read (one round trip per turn).
      if (this.init.mayRepeatEarlierRun && !this.pastPrefix && (await this.repeatsEarlierRun(place))) return;
      const sent = this.asSent(chunk, own);
      const applied = this.merge.apply(sent);
      const artifact: Artifact = { ...applied.artifact, parts: sent.parts };
      const event: StreamResponse = {
        artifactUpdate: { taskId: this.init.taskId, contextId: this.init.contextId, artifact, append: sent.append === true, lastChunk: sent.lastChunk === true },
      };
      // Stored beside the task's artifacts snapshot; now and then the whole snapshot instead (see ArtifactCompaction).
      const pending: PendingArtifactChunk = { append: sent.append === true, artifact };
      const pendingBytes = JSON.stringify(pending).length;
      const compact = this.compaction.compactsWith(pendingBytes);
      let stored: boolean;
      try {
        await this.paceOutput(pendingBytes);
        // The chunk goes too: a compaction past one segment stores it pending first (TurnOperations.appendEvents).
        stored = await this.append(commandSent, compact ? this.artifacts : undefined, undefined, event, place, { artifactId: sent.artifactId, append: sent.append === true }, pending);
      } catch (error) {
        // Not stored (an output bound, a stale lease): the artifacts the turn ends with must not hold it.
        applied.undo();
        throw error;
      }
      if (!stored) {
        // An earlier run of this turn stored this chunk already: the stored artifacts (which
        // this run started from) include it, so it must not be applied a second time.
        applied.undo();
      } else {
        this.compaction.stored(pendingBytes, compact);
      }
    });
  }

  /**
   * The chunk as it is stored. A re-run still repeating its earlier run may diverge at this
   * chunk. Appended as it is, it would extend what the earlier run stored after the shared part
   * (a spliced reply); sent whole instead, it replaces the artifact with exactly what this run
   * built. Repeats are still recognized: the digest is of the chunk the adapter emitted. When the
   * stored artifact is exactly what this run built so far (the earlier run stopped where this
   * run's repeats end), the chunk is appended as it is: no splice, and no whole artifact in one call.
   */
  private asSent(chunk: ArtifactChunk, own: OwnParts | undefined): ArtifactChunk {
    if (own === undefined || this.repeatedEvents === 0 || chunk.append !== true) return chunk;
    const stored = this.artifacts.find((a) => a.artifactId === chunk.artifactId);
    if (stored !== undefined && isDeepStrictEqual(stored.parts, own.before)) return chunk;
    return { ...chunk, append: false, parts: own.after };
  }

  /** Notes the parts this run itself has put in the artifact, when it started it with a replacing chunk (while it may repeat an earlier run). */
  private noteOwnParts(chunk: ArtifactChunk): OwnParts | undefined {
    if (this.pastPrefix) {
      this.ownArtifactParts.clear();
      return undefined;
    }
    const before = chunk.append === true ? this.ownArtifactParts.get(chunk.artifactId) : [];
    if (before === undefined) {
      this.ownArtifactParts.delete(chunk.artifactId);
      return undefined;
    }
    const after = [...before, ...chunk.parts];
    this.ownArtifactParts.set(chunk.artifactId, after);
    return { before, after };
  }

  /**
   * The place of the adapter's next event in this run, taken when the adapter makes the call
   * (so it follows call order even when the adapter does not await), with a digest of what the
   * event says: a re-run that says the same at the same place appends nothing.
   */
  private nextPlace(content: JsonObject): Place {
    this.emitSequence += 1;
    const digest = createHash('sha256').update(JSON.stringify(content)).digest('base64url').slice(0, 22);
    return { sequence: this.emitSequence, digest };
  }

  /**
   * Waits until the owner's output rate has room for `bytes` (limits.outputBytesPerSecond). It
   * runs in the write queue, so the adapter's later writes wait behind it; the turn's abort (a
   * cancel, the deadline, a shutdown) ends the wait at once. A small output is charged after the
   * fact instead: the charge goes out beside its append, and the next output first waits out the
   * debt it reports (a failed charge fails that next output, as a failed take would this one).
   */
  private async paceOutput(bytes: number): Promise<void> {
    const { outputPacer: pacer, signal } = this.init;
    if (pacer === undefined) return;
    const pending = this.pendingCharge;
    this.pendingCharge = undefined;
    if (pending !== undefined) {
      const debtMs = await pending;
      if (debtMs > 0) await sleep(debtMs, undefined, { signal });
    }
    signal.throwIfAborted();
    if (pacer.chargedAfter(bytes)) {
      const charge = pacer.charge(bytes);
      // Seen by the next output; a turn that emits nothing more leaves a failed charge unpaid.
      charge.catch(() => undefined);
      this.pendingCharge = charge;
      return;
    }
    for (;;) {
      const waitMs = await pacer.take(bytes);
      if (waitMs <= 0) return;
      await sleep(waitMs, undefined, { signal });
      signal.throwIfAborted();
    }
  }

  /** Where an event of this run goes, as the write queue tells a turn's final write. */
  private appendPlace(place: Place): EventPlace {
    return { scope: this.init.emitScope, sequence: place.sequence, digest: place.digest };
  }

  /**
   * Appends one event; false when an earlier run of this turn had already appended it.
   * `commandSent` is called once its one command is on its way (not for a compaction, which may
   * write the snapshot in segments after it).
   */
  private async append(
    commandSent: () => void,
    artifacts: Artifact[] | undefined,
    status: TaskStatus | undefined,
    event: StreamResponse,
    place: Place,
    artifactChunk?: { artifactId: string; append: boolean },
    pendingArtifact?: PendingArtifactChunk,
  ): Promise<boolean> {
    const { init } = this;
    const startedAt = timeNow();
    // A first run's event without a compaction may ride on the turn's final write (offerToFinal):
    // a re-run's must be checked against the earlier run's, which only appendEvents does. Only
    // the run's first few are offered: each offer waits a turn of the event loop, which a run that
    // streams many events would pay on every one of them for one saved call at its end.
    const offered = artifacts === undefined && place.sequence <= OFFERED_EVENTS_MAX && !(init.mayRepeatEarlierRun && !this.pastPrefix) ? JSON.stringify(event) : undefined;
    if (offered !== undefined && offered.length <= OFFERED_EVENT_MAX_CHARS) {
      const carried = { json: offered, ...(init.outputLimits === undefined ? {} : { outputLimits: init.outputLimits }), ...(artifactChunk === undefined ? {} : { artifactChunk }) };
      if ((await init.queue.offerToFinal(carried)) === 'carried') {
        if (startedAt !== 0) addEventsTime(init.taskId, startedAt);
        this.pastPrefix = true;
        return true;
      }
    }
    const appending = init.store.turns.appendEvents({
      taskId: init.taskId,
      ownerKey: init.ownerKey,
      contextId: init.contextId,
      generation: init.generation,
      artifacts,
      status,
      events: [event],
      emit: { scope: init.emitScope, sequence: place.sequence, digest: place.digest, pastPrefix: this.pastPrefix },
      ...(init.outputLimits === undefined ? {} : { outputLimits: init.outputLimits }),
      ...(artifactChunk === undefined ? {} : { artifactChunk }),
      ...(pendingArtifact === undefined ? {} : { pendingArtifact }),
      now: new Date(),
    });
    if (artifacts === undefined) commandSent();
    const result = await appending;
    if (startedAt !== 0) addEventsTime(init.taskId, startedAt);
    if (result.kind === 'repeated') {
      this.noteRepeated(place);
      return false;
    }
    this.pastPrefix = true;
    return true;
  }

  /** True (and counted) when an earlier run of this turn stored an event with this content at this place. */
  private async repeatsEarlierRun(place: Place): Promise<boolean> {
    const { init } = this;
    if (!(await init.store.turns.wasEmitted(init.taskId, { scope: init.emitScope, sequence: place.sequence, digest: place.digest }))) return false;
    this.noteRepeated(place);
    return true;
  }

  private noteRepeated(place: Place): void {
    const { init } = this;
    this.repeatedEvents += 1;
    if (this.repeatedEvents === 1) {
      init.logger.info('this run repeats events an earlier run of the turn stored; they are not stored again', {
        taskId: init.taskId,
        turn: init.turn,
        attempt: init.attempt,
        emitScope: init.emitScope,
        firstRepeated: place.sequence,
      });
    }
  }
}
