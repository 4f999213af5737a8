// Writes a model's reply into one artifact as it arrives.
//
// Coalescing: at most one chunk is being stored at a time. Deltas that arrive while a chunk is
// being stored wait in a buffer and go out together as the next chunk, so a model writing
// tokens faster than Redis stores them costs one write per round trip, not one per token; a
// slow model still gets one chunk per delta.
//
// Replacement: the first chunk of every call (a retry after a stream cut, or a new attempt of
// the turn on another worker) has append: false, so it replaces whatever an earlier call left
// in the artifact and a client never sees two replies spliced together. A new attempt's first
// and last chunks also carry `attemptMetadata` (the attempt number): the runtime drops events a
// re-run repeats at the same place, and a first chunk equal to the lost attempt's would be
// dropped, leaving the new attempt's later chunks appended to the old partial reply; and a lost
// attempt that had stored its whole reply ended it with a last chunk the new attempt's would
// repeat word for word (the same event twice in the replay buffer, though a different run's).
// The chunks between inherit the first chunk's metadata in the artifact, so every event of the
// new attempt says which attempt it belongs to.
//
// Backpressure: a store that takes its time (a slow Redis, the owner's output rate pacing the
// turn) must not make the buffer grow with whatever the model sends meanwhile. Past
// BACKLOG_CHARS buffered the model call waits (whenWritable) before it reads the next delta, so
// the worker holds about one chunk per turn, and a backend that streams faster than its output
// may be stored is read no faster than that (its connection's own flow control holds it back).
import type { ArtifactChunk } from '../types.ts';
import type { JsonObject } from '../../src/protocol/types.ts';

/** Buffered characters past which the model call waits for the chunk being stored before reading on. */
export const BACKLOG_CHARS = 64 * 1024;

export class ReplyWriter {
  private pending = '';
  private inFlight: Promise<void> | undefined;
  /** The next chunk replaces the artifact (true until this call's first chunk is out). */
  private replaceNext = true;
  /** Chunks stored so far, by every call of this writer. */
  chunks = 0;
  /** The first failed write (e.g. a newer lease holds the task); every later call rethrows it. */
  failure: Error | undefined;
  /** Called once when a write fails, so the model call can be stopped at once. */
  onFailure: ((error: Error) => void) | undefined;

  constructor(
    private readonly emit: (chunk: ArtifactChunk) => Promise<void>,
    readonly artifactId: string,
    private readonly name: string,
    /** Whether the artifact already holds something (an earlier attempt's partial reply). */
    private existing: boolean,
    /** Metadata of this writer's first and last chunks (makes them differ from a lost attempt's). */
    private attemptMetadata?: JsonObject,
  ) {}

  /** Adds a delta of the reply; it is stored now, or with the next chunk if one is being stored. */
  push(delta: string): void {
    if (this.failure !== undefined) throw this.failure;
    if (delta === '') return;
    this.pending += delta;
    if (this.inFlight === undefined) this.flush();
  }

  /** True when the model call should wait (whenWritable) before it reads the next delta. */
  get backlogged(): boolean {
    return this.inFlight !== undefined && this.pending.length >= BACKLOG_CHARS;
  }

  /** Resolves once the buffer is below BACKLOG_CHARS or on its way to the store; rethrows a failed write. */
  async whenWritable(): Promise<void> {
    while (this.backlogged) await (this.inFlight as Promise<void>);
    if (this.failure !== undefined) throw this.failure;
  }

  /** A retried call starts over: its first chunk replaces what the artifact holds. */
  async restart(): Promise<void> {
    await this.drain();
    this.pending = '';
    this.replaceNext = true;
  }

  /**
   * The final chunk (lastChunk: true) with what is still buffered and the artifact's metadata.
   * Nothing is written when the reply is empty and the artifact never held anything.
   */
  async finish(metadata: JsonObject): Promise<void> {
    await this.drain();
    if (this.replaceNext && !this.existing && this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    await this.write(text, true, metadata);
  }

  /** The whole reply as one chunk (a non-streamed completion). */
  async complete(text: string, metadata: JsonObject): Promise<void> {
    await this.drain();
    this.pending = text;
    await this.finish(metadata);
  }

  private flush(): void {
    const text = this.pending;
    this.pending = '';
    this.inFlight = this.write(text, false, undefined).then(
      () => {
        this.inFlight = undefined;
        if (this.pending !== '') this.flush();
      },
      (error: unknown) => {
        this.inFlight = undefined;
        this.fail(error as Error);
      },
    );
  }

  private write(text: string, lastChunk: boolean, metadata: JsonObject | undefined): Promise<void> {
    const chunk: ArtifactChunk = { artifactId: this.artifactId, name: this.name, parts: [{ text }], append: !this.replaceNext };
    if (lastChunk) chunk.lastChunk = true;
    const marker = this.chunks === 0 || lastChunk ? this.attemptMetadata : undefined;
    if (metadata !== undefined || marker !== undefined) chunk.metadata = { ...marker, ...metadata };
    this.replaceNext = false;
    this.existing = true;
    this.chunks += 1;
    return this.emit(chunk);
  }

  private fail(error: Error): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.onFailure?.(error);
  }

  /** Waits until no chunk is being stored (the buffer may still hold text). */
  private async drain(): Promise<void> {
    while (this.inFlight !== undefined) await this.inFlight;
    if (this.failure !== undefined) throw this.failure;
  }
}
