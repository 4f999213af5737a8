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
      const moved = movable(pieces);
      worker.postMessage({ id, pieces: moved.pieces } satisfies AssemblyJob, moved.transfer);
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
 * The pieces with their bytes ready to move to the thread instead of being copied. A Buffer may
 * be a view of a larger pooled allocation (a reply parsed out of a socket read), which must not
 * move: those (a pending chunk each, thousands of them while a turn streams small deltas) are
 * copied into one allocation of their own, moved as one; a large reply owns its allocation and
 * moves as it is. Moving thousands of small allocations one by one cost the event loop more
 * than copying them once.
 */
function movable(pieces: StoredArtifactPieces): { pieces: StoredArtifactPieces; transfer: ArrayBuffer[] } {
  const transfer = new Set<ArrayBuffer>();
  const whole = (piece: Uint8Array): boolean => piece.byteOffset === 0 && piece.byteLength === piece.buffer.byteLength && piece.buffer instanceof ArrayBuffer;
  const all = [...(typeof pieces.snapshot === 'string' ? [] : pieces.snapshot), ...pieces.chunks];
  let sharedBytes = 0;
  for (const piece of all) if (typeof piece !== 'string' && !whole(piece)) sharedBytes += piece.byteLength;
  // Not from Node's pool: the allocation is this one's alone, so it may move.
  const shared = sharedBytes > 0 ? Buffer.allocUnsafeSlow(sharedBytes) : undefined;
  if (shared !== undefined) transfer.add(shared.buffer as ArrayBuffer);
  let at = 0;
  const own = (piece: Uint8Array): Uint8Array => {
    if (whole(piece)) {
      // A buffer listed twice cannot be moved: a set.
      transfer.add(piece.buffer as ArrayBuffer);
      return piece;
    }
    const view = new Uint8Array((shared as Buffer).buffer, (shared as Buffer).byteOffset + at, piece.byteLength);
    view.set(piece);
    at += piece.byteLength;
    return view;
  };
  const snapshot = typeof pieces.snapshot === 'string' ? pieces.snapshot : pieces.snapshot.map(own);
  const chunks = pieces.chunks.map((piece) => (typeof piece === 'string' ? piece : own(piece)));
  return { pieces: { snapshot, chunks }, transfer: [...transfer] };
}

/** The process's one assembly thread, started at the first large answer. */
export const artifactAssembly = new ArtifactAssembly();
