// The task-generations extension (issue 30; A2A 1.1 is expected to bring the same idea as a core
// field): every task carries a generation that grows with each change (src/store: the task
// hash's 'generation', bumped in the scripts that change the task). A request that activates the
// extension (A2A-Extensions) sees the generation of every task it is answered with, in
// metadata[<this URI>].generation; GetTask can wait (bounded) until the task passes a generation;
// SendMessage (to an existing task) and CancelTask can name the generation they expect, and are
// refused with ABORTED (HTTP 409, JSON-RPC -31409) when the task has moved on. Parameters travel
// in headers, the only place GetTaskRequest leaves free, or, for the two requests that have it,
// in the request's metadata under this URI. docs/task-generations.md is the user's account.
import { z } from 'zod';
import { A2AError, invalidParams } from '../protocol/errors.ts';
import type { JsonObject, Task } from '../protocol/types.ts';
import { defineExtension } from './definition.ts';

export const TASK_GENERATIONS_URI = 'urn:a2a-gateway:ext:task-generations:v1';

/** GetTask answers once the task's generation is above this one (or at the wait bound). */
export const GENERATION_AFTER_HEADER = 'A2A-Task-Generation-After';
/** How long GetTask may wait, in milliseconds (cut to the gateway's taskGenerationMaxWaitMs). */
export const GENERATION_WAIT_HEADER = 'A2A-Task-Generation-Wait-Ms';
/** SendMessage and CancelTask: the generation the caller expects the task at. */
export const GENERATION_MATCH_HEADER = 'A2A-Task-Generation-Match';

/** The wait when the request names none, and the most it may name (the gateway's taskGenerationMaxWaitMs may cut both). */
export const DEFAULT_GENERATION_WAIT_MS = 10_000;
export const MAX_GENERATION_WAIT_MS = 300_000;

export const taskGenerationsExtension = defineExtension({
  uri: TASK_GENERATIONS_URI,
  description:
    'Task generations: every task answered to a request that activates this extension carries metadata["' +
    TASK_GENERATIONS_URI +
    '"].generation, a number that grows with each change of the task and never repeats. GetTask with the header ' +
    `${GENERATION_AFTER_HEADER}: <n> waits until the task is past generation n (at most ${GENERATION_WAIT_HEADER} ms, default ` +
    `${DEFAULT_GENERATION_WAIT_MS}, cut to the gateway's taskGenerationMaxWaitMs, 30000 unless configured), then answers the task as it is. SendMessage to an existing task and ` +
    `CancelTask take the expected generation (${GENERATION_MATCH_HEADER}: <n>, or the request's metadata["${TASK_GENERATIONS_URI}"].expectedGeneration) ` +
    'and are refused with ABORTED (HTTP 409, JSON-RPC -31409, metadata.currentGeneration) when the task is at another one; nothing changes then.',
  required: false,
  methods: [],
});

/** What a request asks of task generations; undefined when it does not activate the extension. */
export interface GenerationParams {
  /** GetTask: answer once the task is past this generation. */
  after?: number;
  /** GetTask: the most it waits for that (ms). */
  waitMs: number;
  /** SendMessage to an existing task, CancelTask: refuse unless the task is at this generation. */
  expected?: number;
}

const generation = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const headerNumber = z
  .string()
  .max(20)
  .regex(/^\s*\d+\s*$/, 'must be a non-negative integer')
  .transform((value) => Number(value.trim()))
  .pipe(generation);
const requestParams = z.object({ expectedGeneration: generation.optional() }).strict();

function headerValue(header: (name: string) => string | undefined, name: string): number | undefined {
  const raw = header(name);
  if (raw === undefined) return undefined;
  const parsed = headerNumber.safeParse(raw);
  if (!parsed.success) throw invalidParams([{ field: `header ${name}`, description: `"${raw.slice(0, 40)}" is not a generation: send a non-negative integer` }]);
  return parsed.data;
}

/**
 * The request's generation parameters, when it activated the extension: headers first, then the
 * request's metadata under the extension's URI. Malformed values are INVALID_PARAMS (nothing ran).
 */
export function generationParamsOf(
  activated: readonly string[],
  header: (name: string) => string | undefined,
  requestMetadata: JsonObject | undefined,
): GenerationParams | undefined {
  if (!activated.includes(TASK_GENERATIONS_URI)) return undefined;
  const params: GenerationParams = { waitMs: DEFAULT_GENERATION_WAIT_MS };
  const after = headerValue(header, GENERATION_AFTER_HEADER);
  if (after !== undefined) params.after = after;
  const wait = headerValue(header, GENERATION_WAIT_HEADER);
  if (wait !== undefined) params.waitMs = Math.min(wait, MAX_GENERATION_WAIT_MS);
  let expected = headerValue(header, GENERATION_MATCH_HEADER);
  const inMetadata = requestMetadata?.[TASK_GENERATIONS_URI];
  if (inMetadata !== undefined) {
    const parsed = requestParams.safeParse(inMetadata);
    if (!parsed.success) {
      throw invalidParams([{ field: `metadata["${TASK_GENERATIONS_URI}"]`, description: 'takes only {"expectedGeneration": <non-negative integer>}' }]);
    }
    expected ??= parsed.data.expectedGeneration;
  }
  if (expected !== undefined) params.expected = expected;
  return params;
}

/** The task as a request that activated the extension sees it: its generation in metadata, the stored metadata untouched. */
export function withGeneration(task: Task, generation: number | undefined): Task {
  if (generation === undefined) return task;
  return { ...task, metadata: { ...task.metadata, [TASK_GENERATIONS_URI]: { generation } } };
}

/** The refusal of a SendMessage or CancelTask whose expected generation is not the task's. */
export function generationConflict(taskId: string, expected: number, current: number, operation: 'SendMessage' | 'CancelTask'): A2AError {
  return new A2AError(
    'ABORTED',
    `Task ${taskId} is at generation ${current}, not ${expected} as the request expected: it changed since you read it, and this ${operation} changed nothing. ` +
      `Read the task again (GetTask), decide on what it says now, and retry with generation ${current} or later.`,
    { metadata: { taskId, reason: 'TASK_GENERATION_MISMATCH', expectedGeneration: String(expected), currentGeneration: String(current) } },
  );
}
