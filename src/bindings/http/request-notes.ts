// What a request turned out to be about (who called, which operation, which task), noted by
// the bindings as they learn it and read once the response is finished, for the access log.
import type { ServerResponse } from 'node:http';
import type { TraceContext } from '../../telemetry/spans.ts';

export interface RequestNotes {
  principal?: string;
  tenant?: string;
  operation?: string;
  taskId?: string;
  contextId?: string;
  /** The task's state in the answer (TASK_STATE_…), when the answer was a task. */
  state?: string;
  /** The JSON-RPC code of the error answered (either binding), and its reason (metadata.reason, else its kind). */
  errorCode?: number;
  errorReason?: string;
  /** process.hrtime.bigint() when the request arrived (set by the request observer). */
  arrivedAtNs?: bigint;
  /** The trace id of the request's span (tracing on). */
  traceId?: string;
  /** The trace context holding the request's span (tracing on): what the call passes on. */
  trace?: TraceContext;
}

// Kept on the response itself, not in a WeakMap: a WeakMap of every response in flight cost a
// few microseconds a note and more of the collector's time (its ephemeron table), several notes
// a request; and in one shape, not one grown field by field in whatever order they were noted.
const NOTES = Symbol('a2a-gateway.requestNotes');
type Noted = ServerResponse & { [NOTES]?: RequestNotes };

/** Every field there from the start, so the notes keep one shape however they are filled in. */
function blankNotes(): RequestNotes {
  return {
    principal: undefined,
    tenant: undefined,
    operation: undefined,
    taskId: undefined,
    contextId: undefined,
    state: undefined,
    errorCode: undefined,
    errorReason: undefined,
    arrivedAtNs: undefined,
    traceId: undefined,
    trace: undefined,
  };
}

export function noteRequest(response: ServerResponse, fields: RequestNotes): void {
  const noted = response as Noted;
  Object.assign((noted[NOTES] ??= blankNotes()), fields);
}

export function notesOf(response: ServerResponse): RequestNotes {
  return (response as Noted)[NOTES] ?? {};
}

/** Notes what a unary answer says about its task (a Task, or SendMessage's `{ task }`). */
export function noteResult(response: ServerResponse, result: unknown): void {
  if (result === null || typeof result !== 'object') return;
  const wrapped = (result as { task?: unknown }).task;
  const task = (wrapped ?? result) as { id?: unknown; contextId?: unknown; status?: { state?: unknown } };
  if (typeof task.id !== 'string' || typeof task.status?.state !== 'string') {
    const message = (result as { message?: { contextId?: unknown } }).message;
    if (typeof message?.contextId === 'string') noteRequest(response, { contextId: message.contextId });
    return;
  }
  noteRequest(response, { taskId: task.id, state: task.status.state, ...(typeof task.contextId === 'string' ? { contextId: task.contextId } : {}) });
}
