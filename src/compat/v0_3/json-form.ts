// A2A 0.3 objects as its JSON-RPC binding carries them (the 0.3 JSON schema): `kind`
// discriminators on messages, tasks, parts and stream events, lower-case task states and roles,
// file parts as {file: {uri | bytes, name, mimeType}}, `final` on status updates. Translated to
// and from the 1.0 ProtoJSON objects the core speaks; nothing here decides anything.
import { invalidParams } from '../../protocol/errors.ts';
import type { Artifact, JsonObject, JsonValue, Message, Part, StreamResponse, Task, TaskState, TaskStatus } from '../../protocol/types.ts';

export type LegacyObject = Record<string, unknown>;

const STATE_TO_LEGACY: Record<TaskState, string> = {
  TASK_STATE_SUBMITTED: 'submitted',
  TASK_STATE_WORKING: 'working',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_INPUT_REQUIRED: 'input-required',
  TASK_STATE_REJECTED: 'rejected',
  TASK_STATE_AUTH_REQUIRED: 'auth-required',
};
const STATE_FROM_LEGACY = new Map(Object.entries(STATE_TO_LEGACY).map(([state, legacy]) => [legacy, state as TaskState]));

export const legacyStateOf = (state: TaskState): string => STATE_TO_LEGACY[state] ?? 'unknown';
/** A 0.3 state filter (ListTasks has none in 0.3, but states appear in requests of extensions). */
export const stateOfLegacy = (state: string): TaskState | undefined => STATE_FROM_LEGACY.get(state);

/**
 * 0.3 data parts hold objects only; a 1.0 data part may hold any JSON value, which travels
 * wrapped as {value} with this metadata flag (the convention the official SDK's compat layer uses).
 */
export const DATA_PART_COMPAT_FLAG = 'data_part_compat';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function withOptional(target: LegacyObject, entries: Record<string, unknown>): LegacyObject {
  for (const [key, value] of Object.entries(entries)) {
    if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) continue;
    target[key] = value;
  }
  return target;
}

// ---- 0.3 → 1.0 (requests) ----

export function partFromLegacy(raw: unknown, field: string): Part {
  if (!isObject(raw)) throw invalidParams([{ field, description: 'must be an object with a kind (text, file or data)' }]);
  const metadata = isObject(raw.metadata) ? (raw.metadata as JsonObject) : undefined;
  const part: Part = {};
  switch (raw.kind) {
    case 'text':
      part.text = raw.text as string;
      break;
    case 'file': {
      const file = isObject(raw.file) ? raw.file : {};
      if (typeof file.bytes === 'string') part.raw = file.bytes;
      else if (typeof file.uri === 'string') part.url = file.uri;
      else throw invalidParams([{ field: `${field}.file`, description: 'needs bytes (base64) or uri' }]);
      if (typeof file.name === 'string') part.filename = file.name;
      if (typeof file.mimeType === 'string') part.mediaType = file.mimeType;
      break;
    }
    case 'data': {
      let data = raw.data as JsonValue;
      if (metadata?.[DATA_PART_COMPAT_FLAG] === true) {
        if (isObject(data) && 'value' in data) data = data.value as JsonValue;
        const rest = { ...metadata };
        delete rest[DATA_PART_COMPAT_FLAG];
        if (Object.keys(rest).length > 0) part.metadata = rest;
        part.data = data;
        return part;
      }
      part.data = data;
      break;
    }
    default:
      throw invalidParams([{ field: `${field}.kind`, description: `is ${JSON.stringify(raw.kind)}; a 0.3 part's kind is text, file or data` }]);
  }
  if (metadata !== undefined) part.metadata = metadata;
  return part;
}

const ROLE_FROM_LEGACY: Record<string, Message['role']> = { user: 'ROLE_USER', agent: 'ROLE_AGENT' };

export function messageFromLegacy(raw: unknown, field = 'message'): LegacyObject {
  if (!isObject(raw)) throw invalidParams([{ field, description: 'must be an object' }]);
  const parts = Array.isArray(raw.parts) ? raw.parts.map((part, index) => partFromLegacy(part, `${field}.parts[${index}]`)) : raw.parts;
  const role = typeof raw.role === 'string' ? (ROLE_FROM_LEGACY[raw.role] ?? raw.role) : raw.role;
  return withOptional(
    { messageId: raw.messageId, role, parts },
    { contextId: raw.contextId, taskId: raw.taskId, referenceTaskIds: raw.referenceTaskIds, extensions: raw.extensions, metadata: raw.metadata },
  );
}

// ---- 1.0 → 0.3 (responses) ----

export function partToLegacy(part: Part): LegacyObject {
  const metadata = part.metadata === undefined ? undefined : { ...part.metadata };
  if (part.text !== undefined) return withOptional({ kind: 'text', text: part.text }, { metadata });
  if (part.raw !== undefined || part.url !== undefined) {
    const file = withOptional(part.raw !== undefined ? { bytes: part.raw } : { uri: part.url }, { name: part.filename, mimeType: part.mediaType });
    return withOptional({ kind: 'file', file }, { metadata });
  }
  if (isObject(part.data)) return withOptional({ kind: 'data', data: part.data }, { metadata });
  return { kind: 'data', data: { value: part.data ?? null }, metadata: { ...metadata, [DATA_PART_COMPAT_FLAG]: true } };
}

export function messageToLegacy(message: Message): LegacyObject {
  return withOptional(
    { kind: 'message', messageId: message.messageId, role: message.role === 'ROLE_USER' ? 'user' : 'agent', parts: message.parts.map(partToLegacy) },
    { contextId: message.contextId, taskId: message.taskId, metadata: message.metadata, extensions: message.extensions, referenceTaskIds: message.referenceTaskIds },
  );
}

export function statusToLegacy(status: TaskStatus): LegacyObject {
  return withOptional({ state: legacyStateOf(status.state) }, { message: status.message === undefined ? undefined : messageToLegacy(status.message), timestamp: status.timestamp });
}

export function artifactToLegacy(artifact: Artifact): LegacyObject {
  return withOptional(
    { artifactId: artifact.artifactId, parts: artifact.parts.map(partToLegacy) },
    { name: artifact.name, description: artifact.description, metadata: artifact.metadata, extensions: artifact.extensions },
  );
}

export function taskToLegacy(task: Task): LegacyObject {
  return withOptional(
    { kind: 'task', id: task.id, contextId: task.contextId, status: statusToLegacy(task.status) },
    { history: task.history?.map(messageToLegacy), artifacts: task.artifacts?.map(artifactToLegacy), metadata: task.metadata },
  );
}

/** A stream event as a 0.3 result; `final` marks the status update after which the stream ends. */
export function streamEventToLegacy(event: StreamResponse, final: (state: TaskState) => boolean): LegacyObject {
  if ('task' in event) return taskToLegacy(event.task);
  if ('message' in event) return messageToLegacy(event.message);
  if ('statusUpdate' in event) {
    const update = event.statusUpdate;
    return withOptional(
      { kind: 'status-update', taskId: update.taskId, contextId: update.contextId, status: statusToLegacy(update.status), final: final(update.status.state) },
      { metadata: update.metadata },
    );
  }
  const update = event.artifactUpdate;
  return withOptional(
    { kind: 'artifact-update', taskId: update.taskId, contextId: update.contextId, artifact: artifactToLegacy(update.artifact) },
    { append: update.append, lastChunk: update.lastChunk, metadata: update.metadata },
  );
}
