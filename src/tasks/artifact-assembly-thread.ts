// The thread ArtifactAssembly runs: a large task's stored artifacts parsed, merged and
// serialized here, off the gateway's event loop (artifact-assembly.ts says why).
import { parentPort } from 'node:worker_threads';
import { parseStoredArtifacts, storedArtifactsText, type StoredArtifactPieces } from '../store/stored-artifacts.ts';

export interface AssemblyJob {
  id: number;
  /** The stored artifacts field in the pieces the read got (stored-artifacts.ts). */
  pieces: StoredArtifactPieces;
}

export type AssemblyResult = { id: number; json: Uint8Array } | { id: number; error: string };

parentPort?.on('message', ({ id, pieces }: AssemblyJob) => {
  let result: AssemblyResult;
  try {
    const json = Buffer.from(JSON.stringify(parseStoredArtifacts(storedArtifactsText(pieces)).artifacts));
    result = { id, json };
  } catch (error) {
    result = { id, error: error instanceof Error ? error.message : String(error) };
  }
  // A large buffer owns its memory: moved to the gateway's thread, not copied.
  const owned = 'json' in result && result.json.byteOffset === 0 && result.json.byteLength === result.json.buffer.byteLength;
  parentPort?.postMessage(result, owned && 'json' in result ? [result.json.buffer as ArrayBuffer] : []);
});
