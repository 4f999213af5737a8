// The thread ArtifactAssembly runs: a large task's stored artifacts read, parsed, merged and
// serialized here, off the gateway's event loop (artifact-assembly.ts says why). A gateway
// opens a source (its Redis and key prefix) and the thread reads large tasks there itself, on
// a connection of its own: the stored pieces' tens of megabytes never pass through the event
// loop's heap, only the answer's bytes do, once. Pieces a caller sends (a process that opened
// no source) are assembled the same way. A large message's digest is computed here too.
import { parentPort } from 'node:worker_threads';
import { openRedis, RedisUnavailableError, type RedisClient, type RedisRole, type RedisTarget } from '../redis/connection.ts';
import { parseStoredArtifacts, storedArtifactsText, type StoredArtifactPieces } from '../store/stored-artifacts.ts';
import { readRawLargeTaskAt } from '../store/task-large-read.ts';
import type { TaskRead } from '../store/task-read.ts';
import { messageDigestOf, type DigestedFields } from './message-digest.ts';

/** Where a gateway's large tasks are read: its Redis, as its own client-facing connections reach it. */
export interface ReadSource {
  target: RedisTarget;
  policy: { outageGraceMs?: number; commandTimeoutMs?: number };
  keyPrefix: string;
}

export type AssemblyJob =
  /** Assembles the pieces sent. */
  | { kind: 'assemble'; id: number; pieces: StoredArtifactPieces; packedChunks?: { bytes: Uint8Array; ends: number[] } }
  /** Reads a large task as its owner reads it and holds its artifacts, as stored, under `id`. */
  | { kind: 'read'; id: number; source: number; taskId: string; ownerKey: string; historyLength: number | undefined }
  /** Assembles the artifacts a read holds, and lets them go. */
  | { kind: 'assembleHeld'; id: number; held: number }
  | { kind: 'drop'; held: number }
  | { kind: 'open'; source: number; settings: ReadSource }
  | { kind: 'close'; source: number }
  /** A large message's digest (message-digest.ts): canonicalizing and hashing a megabyte took the event loop about 16 ms. */
  | { kind: 'digest'; id: number; content: DigestedFields };

export type AssemblyResult =
  | { id: number; json: Uint8Array }
  | { id: number; read: TaskRead | undefined }
  | { id: number; digest: string }
  /** `unavailable`: the thread's Redis was lost past its grace period (RedisUnavailableError), told apart on the gateway's thread. */
  | { id: number; error: string; unavailable?: { role: RedisRole; downForMs: number } };

/**
 * How long a read's artifacts are held for an assembly that does not come (a reader that failed
 * between the two): they are let go after this, looked for every HELD_SWEEP_MS.
 */
const HELD_FOR_MS = 30_000;
const HELD_SWEEP_MS = 5_000;

const sources = new Map<number, { settings: ReadSource; redis?: RedisClient }>();
const held = new Map<number, { pieces: StoredArtifactPieces; at: number }>();

/** The source's connection, made at its first read: a gateway that never answers a large task never opens it. */
function connectionOf(source: { settings: ReadSource; redis?: RedisClient }): RedisClient {
  source.redis ??= openRedis(source.settings.target, 'commands', { connectionName: 'a2a-gateway:assembly' }, source.settings.policy);
  return source.redis;
}

/** The job's pending chunks, cut apart again when they came packed. */
function chunksOf(pieces: StoredArtifactPieces, packedChunks: { bytes: Uint8Array; ends: number[] } | undefined): StoredArtifactPieces['chunks'] {
  if (packedChunks === undefined) return pieces.chunks;
  const { bytes, ends } = packedChunks;
  return ends.map((end, index) => bytes.subarray(index === 0 ? 0 : (ends[index - 1] as number), end));
}

const assembled = (pieces: StoredArtifactPieces): Buffer => Buffer.from(JSON.stringify(parseStoredArtifacts(storedArtifactsText(pieces)).artifacts));

function letGoOfStale(now: number): void {
  for (const [id, entry] of held) {
    if (now - entry.at < HELD_FOR_MS) break;
    held.delete(id);
  }
}

async function run(job: AssemblyJob): Promise<AssemblyResult | undefined> {
  switch (job.kind) {
    case 'assemble':
      return { id: job.id, json: assembled({ snapshot: job.pieces.snapshot, chunks: chunksOf(job.pieces, job.packedChunks) }) };
    case 'read': {
      const source = sources.get(job.source);
      if (source === undefined) throw new Error(`no read source ${job.source} is open`);
      const raw = await readRawLargeTaskAt(connectionOf(source), source.settings.keyPrefix, job.taskId, job.ownerKey, job.historyLength);
      if (raw !== undefined) held.set(job.id, { pieces: raw.artifacts, at: Date.now() });
      return { id: job.id, read: raw?.read };
    }
    case 'assembleHeld': {
      const entry = held.get(job.held);
      if (entry === undefined) throw new Error(`the artifacts read ${HELD_FOR_MS / 1000} s or more ago were let go`);
      held.delete(job.held);
      return { id: job.id, json: assembled(entry.pieces) };
    }
    case 'drop':
      held.delete(job.held);
      return undefined;
    case 'open':
      sources.set(job.source, { settings: job.settings });
      return undefined;
    case 'close':
      sources.get(job.source)?.redis?.disconnect();
      sources.delete(job.source);
      return undefined;
    case 'digest':
      return { id: job.id, digest: messageDigestOf(job.content) };
  }
}

// Not what keeps the thread alive: the gateway's thread decides that.
setInterval(() => letGoOfStale(Date.now()), HELD_SWEEP_MS).unref();

parentPort?.on('message', (job: AssemblyJob) => {
  run(job).then(
    (result) => {
      if (result === undefined) return;
      // A large buffer owns its memory: moved to the gateway's thread, not copied.
      const owned = 'json' in result && result.json.byteOffset === 0 && result.json.byteLength === result.json.buffer.byteLength;
      parentPort?.postMessage(result, owned && 'json' in result ? [result.json.buffer as ArrayBuffer] : []);
    },
    (error: unknown) => {
      if (!('id' in job)) return;
      const unavailable = error instanceof RedisUnavailableError ? { role: error.role, downForMs: error.downForMs } : undefined;
      parentPort?.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error), unavailable } satisfies AssemblyResult);
    },
  );
});
