// The thread ArtifactAssembly runs: a large task's stored artifacts parsed, merged and
// serialized here, off the gateway's event loop (artifact-assembly.ts says why).
import { parentPort } from 'node:worker_threads';
import { parseStoredArtifacts, storedArtifactsText, type StoredArtifactPieces } from '../store/stored-artifacts.ts';

export interface AssemblyJob {
  id: number;
  /** The stored artifacts field in the pieces the read got (stored-artifacts.ts). */
  pieces: StoredArtifactPieces;
  /** The pending chunks' bytes in one allocation (`pieces.chunks` is then empty), and where each ends. */
  packedChunks?: { bytes: Uint8Array; ends: number[] };
}

export type AssemblyResult = { id: number; json: Uint8Array } | { id: number; error: string };

/** The job's pending chunks, cut apart again when they came packed. */
function chunksOf({ pieces, packedChunks }: AssemblyJob): StoredArtifactPieces['chunks'] {
  if (packedChunks === undefined) return pieces.chunks;
  const { bytes, ends } = packedChunks;
  return ends.map((end, index) => bytes.subarray(index === 0 ? 0 : (ends[index - 1] as number), end));
}

parentPort?.on('message', (job: AssemblyJob) => {
  const { id, pieces } = job;
  let result: AssemblyResult;
  try {
    const json = Buffer.from(JSON.stringify(parseStoredArtifacts(storedArtifactsText({ snapshot: pieces.snapshot, chunks: chunksOf(job) })).artifacts));
    result = { id, json };
  } catch (error) {
    result = { id, error: error instanceof Error ? error.message : String(error) };
  }
  // A large buffer owns its memory: moved to the gateway's thread, not copied.
  const owned = 'json' in result && result.json.byteOffset === 0 && result.json.byteLength === result.json.buffer.byteLength;
  parentPort?.postMessage(result, owned && 'json' in result ? [result.json.buffer as ArrayBuffer] : []);
});
