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

/** The snapshot with the pending chunks applied in order (the snapshot array is not changed). */
export function mergeArtifactChunks(snapshot: readonly Artifact[], chunks: readonly PendingArtifactChunk[]): Artifact[] {
  const artifacts = [...snapshot];
  for (const chunk of chunks) applyArtifactChunk(artifacts, { ...chunk.artifact, append: chunk.append });
  return artifacts;
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
