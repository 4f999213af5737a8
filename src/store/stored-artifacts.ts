// A task's artifacts as the store keeps them while a turn streams: the task hash's `artifacts`
// field is a compacted snapshot, and the artifact chunks stored since sit in a list beside it
// (TaskKeys.artifactChunks). Re-writing the whole snapshot for every chunk would cost traffic
// quadratic in what the turn produces; the turn's worker compacts only now and then (turn-output.ts)
// and at the turn's end (finishTurn). Every reader merges the two here, with one definition.
import type { Artifact, JsonObject, Part } from '../protocol/types.ts';

/** One change to an artifact, as an adapter's chunk or an artifact-update event makes it (A2A append semantics). */
export interface ArtifactChange {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  /** true: add the parts to the artifact of this id; false/absent: replace (or add) it. */
  append?: boolean;
  metadata?: JsonObject;
}

/** An entry of the pending chunk list: what the artifact-update event said. */
export interface PendingArtifactChunk {
  append: boolean;
  /** The event's artifact: its name, description and metadata as merged, and only this chunk's parts. */
  artifact: Artifact;
}

/** Applies one change to the artifact list the way a client applying the events would; returns the artifact as it now stands. */
export function applyArtifactChunk(artifacts: Artifact[], chunk: ArtifactChange): Artifact {
  return new ArtifactMerge(artifacts).apply(chunk).artifact;
}

/** A change an ArtifactMerge applied, and how to take it back. */
export interface AppliedChange {
  artifact: Artifact;
  /** Restores the list and the artifact as they were before this change (only the latest change may be undone). */
  undo(): void;
}

/**
 * Applies changes to an artifact list in time linear in what they add. Appending copy-on-write
 * (a new parts array per chunk) costs time quadratic in an artifact streamed as many small
 * chunks: a 30 MB artifact in 1 KB deltas took seconds of CPU to read back. An artifact is
 * copied once, the first time a change touches it, and after that its parts array is this
 * merge's own and grows in place; artifacts the list held before are never mutated.
 */
export class ArtifactMerge {
  private readonly owned = new Set<Artifact>();

  constructor(readonly artifacts: Artifact[]) {}

  apply(chunk: ArtifactChange): AppliedChange {
    const { artifacts } = this;
    const index = artifacts.findIndex((a) => a.artifactId === chunk.artifactId);
    const previous = index >= 0 ? artifacts[index] : undefined;
    if (chunk.append === true && previous !== undefined && this.owned.has(previous)) {
      const { parts, name, description, metadata } = previous;
      const length = parts.length;
      for (const part of chunk.parts) parts.push(part);
      applyDescriptive(previous, chunk);
      return {
        artifact: previous,
        undo: () => {
          parts.length = length;
          restoreDescriptive(previous, { name, description, metadata });
        },
      };
    }
    const merged: Artifact = {
      artifactId: chunk.artifactId,
      parts: chunk.append === true && previous !== undefined ? [...previous.parts, ...chunk.parts] : [...chunk.parts],
    };
    const inherited = { name: previous?.name, description: previous?.description, metadata: previous?.metadata };
    restoreDescriptive(merged, inherited);
    applyDescriptive(merged, chunk);
    this.owned.add(merged);
    if (previous !== undefined) artifacts[index] = merged;
    else artifacts.push(merged);
    return {
      artifact: merged,
      undo: () => {
        this.owned.delete(merged);
        const at = artifacts.indexOf(merged);
        if (previous !== undefined) artifacts[at] = previous;
        else artifacts.splice(at, 1);
      },
    };
  }
}

type Descriptive = Pick<Artifact, 'name' | 'description' | 'metadata'>;

/** A change's name, description and metadata replace the artifact's; what it leaves out stays. */
function applyDescriptive(artifact: Artifact, chunk: ArtifactChange): void {
  if (chunk.name !== undefined) artifact.name = chunk.name;
  if (chunk.description !== undefined) artifact.description = chunk.description;
  if (chunk.metadata !== undefined) artifact.metadata = chunk.metadata;
}

function restoreDescriptive(artifact: Artifact, values: Descriptive): void {
  for (const key of ['name', 'description', 'metadata'] as const) {
    if (values[key] === undefined) delete artifact[key];
    else (artifact as Descriptive)[key] = values[key] as never;
  }
}

/** The snapshot with the pending chunks applied in order (the snapshot array is not changed). */
export function mergeArtifactChunks(snapshot: readonly Artifact[], chunks: readonly PendingArtifactChunk[]): Artifact[] {
  const merge = new ArtifactMerge([...snapshot]);
  for (const chunk of chunks) merge.apply({ ...chunk.artifact, append: chunk.append });
  return merge.artifacts;
}

/** The artifacts as a reader got them, with the sizes the turn's worker decides its next compaction by. */
export interface StoredArtifacts {
  artifacts: Artifact[];
  /** About how big the stored snapshot's JSON is (what compaction decides by, not a bound). */
  snapshotBytes: number;
  /** About how big the pending chunks' JSON is. */
  pendingBytes: number;
}

/**
 * The artifacts field of a read (include/storedArtifacts.lua): the snapshot's JSON array when no
 * chunk is pending, else {"snapshotBytes": n, "snapshot": [...], "chunks": [...]}; '' = none.
 */
export function parseStoredArtifacts(raw: string | undefined): StoredArtifacts {
  if (raw === undefined || raw === '') return { artifacts: [], snapshotBytes: 2, pendingBytes: 0 };
  const parsed = JSON.parse(raw) as Artifact[] | { snapshotBytes: number; snapshot: Artifact[]; chunks: PendingArtifactChunk[] };
  if (Array.isArray(parsed)) return { artifacts: parsed, snapshotBytes: raw.length, pendingBytes: 0 };
  return { artifacts: mergeArtifactChunks(parsed.snapshot, parsed.chunks), snapshotBytes: parsed.snapshotBytes, pendingBytes: Math.max(0, raw.length - parsed.snapshotBytes) };
}

/** The same field built from plain reads (ListTasks' pipeline): the snapshot's JSON and the list's entries. */
export function storedArtifactsField(snapshot: string, chunks: readonly string[]): string {
  if (chunks.length === 0) return snapshot;
  const stored = snapshot === '' ? '[]' : snapshot;
  return `{"snapshotBytes":${stored.length},"snapshot":${stored},"chunks":[${chunks.join(',')}]}`;
}

/**
 * The stored artifacts field as a large read got it: the snapshot (text, or its segments' bytes
 * undecoded) and the pending chunks (text or bytes). Decoding and joining tens of MB is left to
 * where the artifacts are assembled (off the event loop, src/tasks/artifact-assembly.ts).
 */
export interface StoredArtifactPieces {
  snapshot: string | Uint8Array[];
  chunks: (string | Uint8Array)[];
}

const textOf = (piece: string | Uint8Array): string => (typeof piece === 'string' ? piece : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength).toString('utf8'));

/** The stored artifacts field the pieces make (segments are cut between characters: joined, they decode exactly). */
export function storedArtifactsText(pieces: StoredArtifactPieces): string {
  const { snapshot } = pieces;
  const text = typeof snapshot === 'string' ? snapshot : snapshot.length === 0 ? '[]' : Buffer.concat(snapshot).toString('utf8');
  return storedArtifactsField(text, pieces.chunks.map(textOf));
}

/** About how many bytes the pieces hold: the length of the field storedArtifactsText makes (what the reader is charged for). */
export function storedPiecesBytes(pieces: StoredArtifactPieces): number {
  const size = (piece: string | Uint8Array): number => (typeof piece === 'string' ? Buffer.byteLength(piece) : piece.byteLength);
  const stored = typeof pieces.snapshot === 'string' ? size(pieces.snapshot) : pieces.snapshot.reduce((sum, piece) => sum + size(piece), 0);
  const snapshot = stored === 0 ? 2 : stored;
  const { chunks } = pieces;
  if (chunks.length === 0) return stored;
  // {"snapshotBytes":<n>,"snapshot":<snapshot>,"chunks":[<chunk>,<chunk>…]}
  const frame = `{"snapshotBytes":${snapshot},"snapshot":,"chunks":[]}`.length + chunks.length - 1;
  return chunks.reduce((sum, piece) => sum + size(piece), snapshot + frame);
}
