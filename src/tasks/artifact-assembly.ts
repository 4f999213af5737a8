// A large task's artifacts (past one stored segment, up to limits.maxTaskOutputBytes) assembled
// for an answer on a thread of their own. Parsing, merging and serializing 30 MB of artifacts
// took the event loop about a quarter of a second per GetTask, and a backend streaming without
// end, read by a poller, held every other caller of the gateway that long, again and again.
// Here the event loop only moves the stored bytes over and writes the bytes that come back
// (json-fragment.ts splices them into the answer). One thread: the work is paid for by the
// reader's rate before it starts (read-tasks.ts), and a second would only take the other core
// from the event loop.
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { StoredArtifactPieces } from '../store/stored-artifacts.ts';
import type { AssemblyJob, AssemblyResult } from './artifact-assembly-thread.ts';

interface Pending {
  resolve: (json: Uint8Array) => void;
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

  /** The artifacts the stored pieces hold, merged, as UTF-8 JSON text of the Artifact array. */
  assemble(pieces: StoredArtifactPieces): Promise<Uint8Array> {
    const worker = this.started();
    const id = this.nextId++;
    return new Promise<Uint8Array>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // The thread holds the process open only while it has work.
      if (this.pending.size === 1) worker.ref();
      const { job, transfer } = movable(id, pieces);
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
    return worker;
  }

  private settle(result: AssemblyResult): void {
    const job = this.pending.get(result.id);
    if (job === undefined) return;
    this.pending.delete(result.id);
    if (this.pending.size === 0) this.worker?.unref();
    if ('json' in result) this.assembled += 1;
    if ('json' in result) job.resolve(new Uint8Array(result.json.buffer, result.json.byteOffset, result.json.byteLength));
    else job.reject(new Error(`a large task's stored artifacts could not be read (${result.error})`));
  }
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
  if (chunks.length === 0 || chunks.some((chunk) => typeof chunk === 'string')) return { job: { id, pieces: { snapshot, chunks } }, transfer: [...transfer] };
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
  return { job: { id, pieces: { snapshot, chunks: [] }, packedChunks: { bytes, ends } }, transfer: [...transfer] };
}

/** The process's one assembly thread, started at the first large answer. */
export const artifactAssembly = new ArtifactAssembly();
