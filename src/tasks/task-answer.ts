// A task read to be answered with (GetTask, CancelTask, a blocking SendMessage, a stream's
// opening snapshot): a large one's artifacts (past one stored segment) are parsed, merged and
// serialized on the assembly thread (./artifact-assembly.ts), never on the event loop, and come
// back as a JsonFragment the JSON bindings splice into the answer, or parsed where the answer is
// translated (gRPC, 0.3, MCP). A small task is the read script's answer, one round trip.
import { JsonFragment } from '../protocol/json-fragment.ts';
import type { Artifact } from '../protocol/types.ts';
import type { HeldLargeTask, RawLargeTask } from '../store/task-large-read.ts';
import { LARGE_TASK_BYTES } from '../store/task-read.ts';
import type { Owner, TaskRead, TaskStore } from '../store/task-store.ts';
import { artifactAssembly } from './artifact-assembly.ts';

/**
 * The task the raw read holds, its artifacts assembled on the thread: a JsonFragment of their
 * JSON when `spliced` (the answer goes through serializeAnswer untranslated), else parsed.
 */
export async function assembledTask(large: RawLargeTask | HeldLargeTask, spliced: boolean): Promise<TaskRead> {
  const json = 'held' in large ? await artifactAssembly.assembleHeld(large.held) : await artifactAssembly.assemble(large.artifacts);
  const { task } = large.read;
  // An empty array is no artifacts: the field is left out, as a small task's read leaves it.
  if (json.byteLength > 2) {
    task.artifacts = spliced ? (new JsonFragment(json) as unknown as Artifact[]) : (JSON.parse(Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString()) as Artifact[]);
  }
  return large.read;
}

/** A task read whose large artifacts are not assembled yet: `read` holds everything else. */
export interface PendingTaskRead {
  read: TaskRead;
  /** The stored artifacts of a large task, still to be assembled (assembledTask), or let go (releaseLarge). */
  large: RawLargeTask | HeldLargeTask | undefined;
}

/**
 * readTask with a large task's artifacts left as stored: a reader that may not need them (a
 * stream resumed inside the replay buffer) decides before anything is assembled.
 */
export async function readTaskPending(store: TaskStore, owner: Owner, taskId: string, historyLength: number | undefined): Promise<PendingTaskRead | undefined> {
  const read = await store.gateway.readTaskWithin(taskId, owner, historyLength, LARGE_TASK_BYTES);
  if (read === undefined) return undefined;
  if (!('large' in read)) return { read, large: undefined };
  const large = await store.gateway.readRawLargeTask(taskId, owner, historyLength);
  return large === undefined ? undefined : { read: large.read, large };
}

/** Lets go of a large read's artifacts, held on the assembly thread, when they will not be assembled. */
export function releaseLarge(large: RawLargeTask | HeldLargeTask | undefined): void {
  if (large !== undefined && 'held' in large) artifactAssembly.drop(large.held);
}

/** The pending read with its artifacts: a large task's assembled off the event loop (assembledTask). */
export function completedRead(pending: PendingTaskRead, spliced: boolean): Promise<TaskRead> {
  return pending.large === undefined ? Promise.resolve(pending.read) : assembledTask(pending.large, spliced);
}

/**
 * readTask for an answer: the same task, with a large one's artifacts assembled off the event
 * loop (assembledTask). Undefined when missing or not the owner's.
 */
export async function readTaskAnswer(store: TaskStore, owner: Owner, taskId: string, historyLength: number | undefined, spliced: boolean): Promise<TaskRead | undefined> {
  const pending = await readTaskPending(store, owner, taskId, historyLength);
  return pending === undefined ? undefined : completedRead(pending, spliced);
}
