// What the downstream's tasks and events become on our task. Live events map one to one
// (a status with a message → our progress status; an artifact chunk → the same chunk, append and
// lastChunk kept), ending states become the turn's outcome (a question keeps its data parts), and
// a task snapshot (a re-attach, a poll) is compared with what our task already holds so only the
// missing parts are emitted: no chunk twice, none lost.
import canonicalize from 'canonicalize';
import type { ArtifactChunk, TurnOutcome } from '../types.ts';
import { partSchema } from '../../src/protocol/schemas.ts';
import type { Artifact, JsonObject, Message, Part, TaskArtifactUpdateEvent, TaskStatus } from '../../src/protocol/types.ts';

/** The id of the artifact that holds a downstream's direct Message reply (spec 3.1.1: no task). */
export const DIRECT_REPLY_ARTIFACT_ID = 'reply';

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The downstream's parts as ours; a part this gateway could not store is replaced by a note, never silently dropped. */
export function partsOf(parts: readonly Part[] | undefined): Part[] {
  return (parts ?? []).map((part) => (partSchema.safeParse(part).success ? part : { text: '[a part the gateway cannot represent was left out]' }));
}

export function textOf(message: Message | undefined): string {
  return (message?.parts ?? [])
    .map((p) => p.text ?? '')
    .join('')
    .trim();
}

const canonical = (part: Part): string => canonicalize(part) ?? '';

/**
 * How a downstream status ends our turn, or undefined while the downstream still works.
 * `taskId` names the downstream task in reasons.
 */
export function outcomeOfStatus(status: TaskStatus, taskId: string): TurnOutcome | undefined {
  const parts = partsOf(status.message?.parts);
  const text = textOf(status.message);
  switch (status.state) {
    case 'TASK_STATE_COMPLETED':
      return parts.length > 0 ? { state: 'completed', message: parts } : { state: 'completed' };
    case 'TASK_STATE_INPUT_REQUIRED':
      return { state: 'input-required', message: parts.length > 0 ? parts : 'The downstream agent needs more input.' };
    case 'TASK_STATE_AUTH_REQUIRED':
      return { state: 'auth-required', message: parts.length > 0 ? parts : 'The downstream agent needs authorization.' };
    case 'TASK_STATE_FAILED':
      return { state: 'failed', message: reasonParts(`The downstream agent failed task ${taskId}`, text, parts) };
    case 'TASK_STATE_REJECTED':
      return { state: 'rejected', message: reasonParts(`The downstream agent rejected task ${taskId}`, text, parts) };
    case 'TASK_STATE_CANCELED':
      return { state: 'failed', message: reasonParts(`The downstream agent canceled task ${taskId} (not at this gateway's request)`, text, parts) };
    default:
      return undefined;
  }
}

/** The reason first (our wording plus theirs), then the downstream's non-text parts. */
function reasonParts(what: string, reason: string, parts: Part[]): Part[] {
  return [{ text: reason === '' ? `${what}; it gave no reason.` : `${what}: ${reason}` }, ...parts.filter((p) => p.text === undefined)];
}

/**
 * Our task's artifacts as the downstream's events built them: which parts each artifact holds,
 * so a snapshot can be turned into exactly the chunks our task is missing.
 */
export class ArtifactMirror {
  private readonly parts = new Map<string, string[]>();

  constructor(existing: readonly Artifact[]) {
    for (const artifact of existing) this.parts.set(artifact.artifactId, artifact.parts.map(canonical));
  }

  /** A live chunk, forwarded as it came; undefined when it carries no part (nothing to store). */
  live(update: TaskArtifactUpdateEvent): ArtifactChunk | undefined {
    const parts = partsOf(update.artifact.parts);
    if (parts.length === 0) return undefined;
    const id = update.artifact.artifactId;
    const known = update.append === true ? (this.parts.get(id) ?? []) : [];
    this.parts.set(id, [...known, ...parts.map(canonical)]);
    return this.chunkOf(update.artifact, parts, update.append === true, update.lastChunk === true);
  }

  /**
   * The chunk that makes ours equal to the downstream's `artifact`: the missing tail (append) when
   * ours is a prefix of theirs, the whole artifact (replace) when it differs, undefined when equal.
   * `finished` marks it the last chunk (the downstream task ended).
   */
  catchUp(artifact: Artifact, finished: boolean): ArtifactChunk | undefined {
    const parts = partsOf(artifact.parts);
    if (parts.length === 0) return undefined;
    const theirs = parts.map(canonical);
    const ours = this.parts.get(artifact.artifactId) ?? [];
    const prefix = ours.length <= theirs.length && ours.every((part, i) => part === theirs[i]);
    if (prefix && ours.length === theirs.length) return undefined;
    this.parts.set(artifact.artifactId, theirs);
    if (prefix && ours.length > 0) return this.chunkOf(artifact, parts.slice(ours.length), true, finished);
    return this.chunkOf(artifact, parts, false, finished);
  }

  private chunkOf(artifact: Artifact, parts: Part[], append: boolean, lastChunk: boolean): ArtifactChunk {
    const chunk: ArtifactChunk = { artifactId: artifact.artifactId, parts, append, lastChunk };
    if (artifact.name !== undefined && artifact.name !== '') chunk.name = artifact.name;
    if (artifact.description !== undefined && artifact.description !== '') chunk.description = artifact.description;
    if (isObject(artifact.metadata)) chunk.metadata = artifact.metadata;
    return chunk;
  }
}
