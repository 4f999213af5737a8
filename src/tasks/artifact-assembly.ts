// A large task's artifacts (past one stored segment, up to limits.maxTaskOutputBytes) assembled
// for an answer on a thread of their own. Parsing, merging and serializing 30 MB of artifacts
// took the event loop about a quarter of a second per GetTask, and a backend streaming without
// end, read by a poller, held every other caller of the gateway that long, again and again.
// A gateway opens a read source (openReads): the thread then reads the large task itself, on a
// connection of its own, and the event loop only gets the task's other fields and, once the
// caller has paid for them, the answer's bytes (json-fragment.ts splices them into the answer).
// Reading the pieces on the event loop cost it a copy of every megabyte as the Redis client
// joined it from socket reads, another to move it to the thread, and the garbage collections
// that followed: stalls of 27 to 74 ms under abuse rows 13b and 14b. Without a source (a worker
// process), the pieces a caller read are moved over and assembled the same way. One thread: the
// work is paid for by the reader's rate before it starts (read-tasks.ts), and a second would
// only take the other core from the event loop. A large message's digest is computed there too.
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { RedisUnavailableError } from '../redis/connection.ts';
import type { StoredArtifactPieces } from '../store/stored-artifacts.ts';
import type { LargeTaskReader } from '../store/task-large-read.ts';
import type { AssemblyJob, AssemblyResult, ReadSource } from './artifact-assembly-thread.ts';
import type { DigestedFields } from './message-digest.ts';

export type { ReadSource } from './artifact-assembly-thread.ts';

/** A gateway's read source on the thread: its reads hold the artifacts there until assembled or dropped. */
export interface LargeTaskReads extends LargeTaskReader {
  /** Closes the thread's connection for this source. */
  close(): void;
}

interface Pending {
  resolve: (result: AssemblyResult) => void;
  reject: (error: Error) => void;
}

/** Run from TypeScript sources (tests, `npm run dev`): the thread loads its entry the same way. */
const FROM_SOURCES = fileURLToPath(import.meta.url).endsWith('.ts');

class ArtifactAssembly {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Answers assembled so far (what a test checks the path by). */
  assembled = 0;
  /** Message digests computed on the thread so far (the same). */
  digested = 0;

  private nextSource = 1;
  /** The read sources open, opened again on a thread started after one died. */
  private readonly sources = new Map<number, ReadSource>();

  /** The artifacts the stored pieces hold, merged, as UTF-8 JSON text of the Artifact array. */
  async assemble(pieces: StoredArtifactPieces): Promise<Uint8Array> {
    return jsonOf(await this.call((id) => movable(id, pieces)));
  }

  /** The artifacts a read on the thread holds, assembled as `assemble` does; the thread lets them go. */
  async assembleHeld(held: number): Promise<Uint8Array> {
    return jsonOf(await this.call((id) => ({ job: { kind: 'assembleHeld', id, held }, transfer: [] })));
  }

  /**
   * A large message's digest, computed on the thread (the same messageDigestOf): the fields are
   * copied there, a memory copy, instead of canonicalized and hashed on the event loop.
   */
  async digest(message: DigestedFields): Promise<string> {
    const { parts, taskId, contextId, referenceTaskIds } = message;
    const content: DigestedFields = { parts, ...(taskId === undefined ? {} : { taskId }), ...(contextId === undefined ? {} : { contextId }), ...(referenceTaskIds === undefined ? {} : { referenceTaskIds }) };
    const result = await this.call((id) => ({ job: { kind: 'digest', id, content }, transfer: [] }));
    if (!('digest' in result)) throw new Error('the assembly thread answered a digest with something else');
    this.digested += 1;
    return result.digest;
  }

  /** Lets go of the artifacts a read holds, when its reader does not need them assembled. */
  drop(held: number): void {
    // A thread that died since held nothing it could keep.
    this.worker?.postMessage({ kind: 'drop', held } satisfies AssemblyJob);
  }

  /** Opens a source the thread reads large tasks from, on a connection of its own (made at its first read). */
  openReads(settings: ReadSource): LargeTaskReads {
    const source = this.nextSource++;
    this.sources.set(source, settings);
    // A thread not started yet is told when it starts (at the first large answer).
    this.worker?.postMessage({ kind: 'open', source, settings } satisfies AssemblyJob);
    let closed = false;
    return {
      read: async (taskId, ownerKey, historyLength) => {
        const result = await this.call((id) => ({ job: { kind: 'read', id, source, taskId, ownerKey, historyLength }, transfer: [] }));
        if (!('read' in result)) throw new Error('the assembly thread answered a read with something else');
        return result.read === undefined ? undefined : { read: result.read, held: result.id };
      },
      close: () => {
        if (closed) return;
        closed = true;
        this.sources.delete(source);
        this.worker?.postMessage({ kind: 'close', source } satisfies AssemblyJob);
      },
    };
  }

  private call(jobOf: (id: number) => { job: AssemblyJob; transfer: ArrayBuffer[] }): Promise<AssemblyResult> {
    const worker = this.started();
    const id = this.nextId++;
    return new Promise<AssemblyResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // The thread holds the process open only while it has work.
      if (this.pending.size === 1) worker.ref();
      const { job, transfer } = jobOf(id);
      worker.postMessage(job, transfer);
    });
  }

  private started(): Worker {
    if (this.worker !== undefined) return this.worker;
    const entry = new URL(`./artifact-assembly-thread.${FROM_SOURCES ? 'ts' : 'js'}`, import.meta.url);
    // From sources the thread first registers tsx (a dev dependency), as `--import tsx` does for a process.
    const worker = FROM_SOURCES
      ? new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`, { eval: true })
      : new Worker(entry);
    worker.unref();
    worker.on('message', (result: AssemblyResult) => this.settle(result));
    // A thread that died fails what it held; the next answer starts another.
    const fail = (error: Error): void => {
      if (this.worker === worker) this.worker = undefined;
      for (const [id, job] of this.pending) {
        this.pending.delete(id);
        job.reject(new Error(`assembling a large task's artifacts failed (${error.message}); read the task again`));
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the assembly thread exited with code ${code}`)));
    this.worker = worker;
    for (const [source, settings] of this.sources) worker.postMessage({ kind: 'open', source, settings } satisfies AssemblyJob);
    return worker;
  }

  private settle(result: AssemblyResult): void {
    const job = this.pending.get(result.id);
    if (job === undefined) return;
    this.pending.delete(result.id);
    if (this.pending.size === 0) this.worker?.unref();
    if ('json' in result) this.assembled += 1;
    // The thread's error as the message it had (a lost connection's still reads as one, bindings/errors.ts).
    if ('error' in result) job.reject(result.unavailable === undefined ? new Error(result.error) : new RedisUnavailableError(result.unavailable.role, result.unavailable.downForMs));
    else job.resolve(result);
  }
}

function jsonOf(result: AssemblyResult): Uint8Array {
  if ('json' in result) return new Uint8Array(result.json.buffer, result.json.byteOffset, result.json.byteLength);
  throw new Error('the assembly thread answered an assembly with something else');
}

/**
 * The job with its bytes ready to move to the thread instead of being copied. A snapshot's
 * segment is a large reply that owns its allocation: it moves as it is (one that does not is
 * copied into its own). Pending chunks are thousands of small replies while a turn streams
 * small deltas, each a view of the socket read it was parsed from: their bytes are copied into
 * one allocation, moved with where each ends, and the thread cuts them apart. A typed array per
 * chunk, built here and cloned into the message, cost the event loop more than the copy.
 */
function movable(id: number, pieces: StoredArtifactPieces): { job: AssemblyJob; transfer: ArrayBuffer[] } {
  const transfer = new Set<ArrayBuffer>();
  const own = (piece: Uint8Array): Uint8Array => {
    const whole = piece.byteOffset === 0 && piece.byteLength === piece.buffer.byteLength && piece.buffer instanceof ArrayBuffer;
    const owned = whole ? piece : new Uint8Array(piece);
    // A buffer listed twice cannot be moved: a set.
    transfer.add(owned.buffer as ArrayBuffer);
    return owned;
  };
  const snapshot = typeof pieces.snapshot === 'string' ? pieces.snapshot : pieces.snapshot.map(own);
  const { chunks } = pieces;
  if (chunks.length === 0 || chunks.some((chunk) => typeof chunk === 'string')) return { job: { kind: 'assemble', id, pieces: { snapshot, chunks } }, transfer: [...transfer] };
  let total = 0;
  for (const chunk of chunks) total += chunk.length;
  // Not from Node's pool: the allocation is this job's alone, so it may move.
  const bytes = Buffer.allocUnsafeSlow(total);
  const ends: number[] = [];
  let at = 0;
  for (const chunk of chunks as Uint8Array[]) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
    ends.push(at);
  }
  transfer.add(bytes.buffer as ArrayBuffer);
  return { job: { kind: 'assemble', id, pieces: { snapshot, chunks: [] }, packedChunks: { bytes, ends } }, transfer: [...transfer] };
}

/** The process's one assembly thread, started at the first large answer. */
export const artifactAssembly = new ArtifactAssembly();
