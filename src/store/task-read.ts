// A task as its owner reads it: the readTask-4.lua reply (and ListTasks' equivalent) parsed.
import type { JsonObject, JsonValue, Message, Task, TaskStatus } from '../protocol/types.ts';
import { RESERVED_METADATA_KEY } from '../protocol/schemas.ts';
import type { TrimmedEvents } from './replay-bound.ts';
import { str } from './script-reply.ts';
import { parseStoredArtifacts } from './stored-artifacts.ts';
import { SEGMENT_BYTES } from './artifact-segments.ts';

export interface TaskRead {
  task: Task;
  /** The Message the agent answered with instead of a task (spec 3.1.1), when it did. */
  directReply?: Message;
  /** Id of the last event the snapshot includes ('' if the buffer is empty or expired). */
  lastEventId: string;
  /** What the replay bound dropped from the task's buffer, as of the snapshot. */
  trimmed: TrimmedEvents;
  /** The task's generation as of the snapshot (grows with every change; docs/task-generations.md). */
  generation: number;
  /** About what the reply weighs (its strings' UTF-8 bytes): what an answer built from it costs the caller's rate. */
  bytes: number;
}

/** Task metadata key under which the gateway reports what it did to a task (callers may not set it). */
export const GATEWAY_METADATA_KEY = RESERVED_METADATA_KEY;

const isoOf = (ms: string | undefined): JsonValue => (ms ? new Date(Number(ms)).toISOString() : null);

/** The cancellation stages as the task reports them (invariant 6), with which terminal state won. */
function cancellationOf(requested: string | undefined, acknowledged: string | undefined, stopped: string | undefined, outcome: string | undefined): JsonObject {
  return {
    requestedAt: isoOf(requested),
    acknowledgedAt: isoOf(acknowledged),
    stoppedAt: isoOf(stopped),
    // null while the turn has not ended; else the terminal state that won the race.
    outcome: outcome ? outcome : null,
  };
}

/**
 * Each Task object a read built, with its generation and the last event it includes: the faces
 * decorate a task only when the request activated the task-generations extension, so the
 * generation rides beside the object (never in it, never in stored metadata) until then.
 */
const readMarks = new WeakMap<Task, { generation: number; lastEventId: string }>();

/** The generation (and last event id) of a task a read built; undefined for a task built otherwise. */
export function readMarkOf(task: Task): { generation: number; lastEventId: string } | undefined {
  return readMarks.get(task);
}

/** Where the history starts in readTask-4.lua's reply (the fields before it are fixed). */
export const HISTORY_AT = 17;

/** A task as readTask-4.lua returned it (ListTasks builds the same reply from plain reads), or undefined when it is missing or not the caller's. */
export function taskReadOf(reply: (string | number | null)[]): TaskRead | undefined {
  if (reply.length === 0) return undefined;
  const [id, contextId, status, artifacts, metadata, lastEventId, requested, acknowledged, stopped, cancelOutcome, outcome, inputTokens, outputTokens, directReply, trimmedThrough, trimmedCount, generation, ...history] =
    reply.map(str);
  const task: Task = {
    id: id as string,
    contextId: contextId as string,
    status: JSON.parse(status as string) as TaskStatus,
  };
  const parsedArtifacts = parseStoredArtifacts(artifacts).artifacts;
  if (parsedArtifacts.length > 0) task.artifacts = parsedArtifacts;
  const parsedMetadata = JSON.parse(metadata || '{}') as JsonObject;
  // Kept beside what else the gateway recorded there (a sub-agent's link to its coordinator).
  const recorded = parsedMetadata[GATEWAY_METADATA_KEY];
  const gateway: JsonObject = recorded !== null && typeof recorded === 'object' && !Array.isArray(recorded) ? { ...recorded } : {};
  if (requested) gateway.cancellation = cancellationOf(requested, acknowledged, stopped, cancelOutcome);
  if (outcome) gateway.outcome = JSON.parse(outcome) as JsonObject;
  if (inputTokens || outputTokens) {
    const input = Number(inputTokens || 0);
    const output = Number(outputTokens || 0);
    gateway.usage = { inputTokens: input, outputTokens: output, totalTokens: input + output };
  }
  if (directReply) gateway.directReply = true;
  if (Object.keys(gateway).length > 0) parsedMetadata[GATEWAY_METADATA_KEY] = gateway;
  if (Object.keys(parsedMetadata).length > 0) task.metadata = parsedMetadata;
  if (history.length > 0) task.history = history.map((m) => JSON.parse(m) as Message);
  let bytes = 0;
  for (const value of reply) if (typeof value === 'string') bytes += Buffer.byteLength(value);
  const read: TaskRead = { task, lastEventId: lastEventId as string, trimmed: { throughId: trimmedThrough ?? '', count: Number(trimmedCount || 0) }, generation: Number(generation || 0), bytes };
  if (directReply) read.directReply = JSON.parse(directReply) as Message;
  readMarks.set(task, { generation: read.generation, lastEventId: read.lastEventId });
  return read;
}

/**
 * The read of a task just created, built from what was stored instead of read back (a
 * returnImmediately answer: its first message may be a megabyte): the state it was created in,
 * which its creation event (its first, so generation 1) published. `messageBytes`: its first
 * message's JSON bytes, when they were counted (0 otherwise; such an answer is not charged by them).
 */
export function createdTaskRead(created: Task, eventId: string, historyLength: number | undefined, messageBytes: number): TaskRead {
  const task: Task = { id: created.id, contextId: created.contextId, status: created.status };
  // The order a read builds, so the answer's JSON is the same either way.
  if (created.metadata !== undefined && Object.keys(created.metadata).length > 0) task.metadata = created.metadata;
  if (historyLength !== 0 && created.history !== undefined && created.history.length > 0) task.history = created.history;
  readMarks.set(task, { generation: 1, lastEventId: eventId });
  return { task, lastEventId: eventId, trimmed: { throughId: '', count: 0 }, generation: 1, bytes: messageBytes };
}

/**
 * Artifacts above this many bytes are not assembled by the readTask script: a reader gets the
 * task with plain commands (readLargeTask), which Redis answers with a copy of the stored bytes.
 * One segment's worth, as every other script call that carries artifacts (artifact-segments.ts).
 */
export const LARGE_TASK_BYTES = SEGMENT_BYTES;

/** A task whose stored artifacts weigh more than the reader pays for after a read: readTask did not assemble it. */
export interface LargeTask {
  large: true;
  /** What its artifacts weigh as stored (the snapshot's length and the pending chunks'). */
  artifactBytes: number;
}

/** readTask-4.lua's reply with a bound on what the reader pays after the read (its ARGV[3]). */
export function boundedTaskReadOf(reply: (string | number | null)[]): TaskRead | LargeTask | undefined {
  if (reply.length === 2 && str(reply[0]) === 'LARGE') return { large: true, artifactBytes: Number(reply[1]) };
  return taskReadOf(reply);
}

/** The task a final event carried to the SendMessage waiting for it (LiveEvent.answer: readTask-4.lua's reply as JSON). */
export function taskReadOfAnswer(json: string): TaskRead | undefined {
  return taskReadOf(JSON.parse(json) as string[]);
}
