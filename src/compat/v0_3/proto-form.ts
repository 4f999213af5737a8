// A2A 0.3 objects as its HTTP+JSON binding carries them: the ProtoJSON of the 0.3 proto, which
// differs from its JSON-RPC objects (json-form.ts). Messages hold `content`, parts are
// {text} | {file: {fileWithUri | fileWithBytes, mimeType}} | {data: {data}}, states and roles
// are enum names (TASK_STATE_CANCELLED with two Ls), status updates carry `final`.
import { invalidParams } from '../../protocol/errors.ts';
import type { Artifact, JsonObject, JsonValue, Message, Part, StreamResponse, Task, TaskState, TaskStatus } from '../../protocol/types.ts';
import type { LegacyObject } from './json-form.ts';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function withOptional(target: LegacyObject, entries: Record<string, unknown>): LegacyObject {
  for (const [key, value] of Object.entries(entries)) {
    if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) continue;
    target[key] = value;
  }
  return target;
}

/** 1.0 state → 0.3 proto enum name (the 0.3 proto spells CANCELLED). */
const protoStateOf = (state: TaskState): string => (state === 'TASK_STATE_CANCELED' ? 'TASK_STATE_CANCELLED' : state);

// ---- 0.3 → 1.0 (requests) ----

export function partFromProto(raw: unknown, field: string): Part {
  if (!isObject(raw)) throw invalidParams([{ field, description: 'must be an object with text, file or data' }]);
  if (raw.text !== undefined) return { text: raw.text as string };
  if (isObject(raw.file)) {
    const file = raw.file;
    const part: Part = {};
    if (typeof file.fileWithBytes === 'string') part.raw = file.fileWithBytes;
    else if (typeof file.fileWithUri === 'string') part.url = file.fileWithUri;
    else throw invalidParams([{ field: `${field}.file`, description: 'needs fileWithUri or fileWithBytes' }]);
    if (typeof file.mimeType === 'string' && file.mimeType !== '') part.mediaType = file.mimeType;
    return part;
  }
  if (isObject(raw.data)) return { data: (raw.data.data ?? {}) as JsonValue };
  throw invalidParams([{ field, description: 'needs one of text, file or data' }]);
}

export function messageFromProto(raw: unknown, field = 'message'): LegacyObject {
  if (!isObject(raw)) throw invalidParams([{ field, description: 'must be an object' }]);
  const parts = Array.isArray(raw.content) ? raw.content.map((part, index) => partFromProto(part, `${field}.content[${index}]`)) : raw.content;
  return withOptional(
    { messageId: raw.messageId, role: raw.role, parts },
    { contextId: raw.contextId, taskId: raw.taskId, extensions: raw.extensions, metadata: raw.metadata },
  );
}

// ---- 1.0 → 0.3 (responses) ----

export function partToProto(part: Part): LegacyObject {
  if (part.text !== undefined) return { text: part.text };
  if (part.raw !== undefined || part.url !== undefined) {
    return { file: withOptional(part.raw !== undefined ? { fileWithBytes: part.raw } : { fileWithUri: part.url }, { mimeType: part.mediaType }) };
  }
  // A 0.3 DataPart holds a Struct; any other JSON value travels wrapped.
  return { data: { data: isObject(part.data) ? part.data : ({ value: part.data ?? null } as JsonObject) } };
}

export function messageToProto(message: Message): LegacyObject {
  return withOptional(
    { messageId: message.messageId, role: message.role, content: message.parts.map(partToProto) },
    { contextId: message.contextId, taskId: message.taskId, metadata: message.metadata, extensions: message.extensions },
  );
}

function statusToProto(status: TaskStatus): LegacyObject {
  return withOptional({ state: protoStateOf(status.state) }, { message: status.message === undefined ? undefined : messageToProto(status.message), timestamp: status.timestamp });
}

function artifactToProto(artifact: Artifact): LegacyObject {
  return withOptional(
    { artifactId: artifact.artifactId, parts: artifact.parts.map(partToProto) },
    { name: artifact.name, description: artifact.description, metadata: artifact.metadata, extensions: artifact.extensions },
  );
}

export function taskToProto(task: Task): LegacyObject {
  return withOptional(
    { id: task.id, contextId: task.contextId, status: statusToProto(task.status) },
    { artifacts: task.artifacts?.map(artifactToProto), history: task.history?.map(messageToProto), metadata: task.metadata },
  );
}

/** A stream event as a 0.3 StreamResponse; `final` marks the status update after which the stream ends. */
export function streamEventToProto(event: StreamResponse, final: (state: TaskState) => boolean): LegacyObject {
  if ('task' in event) return { task: taskToProto(event.task) };
  if ('message' in event) return { message: messageToProto(event.message) };
  if ('statusUpdate' in event) {
    const update = event.statusUpdate;
    return {
      statusUpdate: withOptional(
        { taskId: update.taskId, contextId: update.contextId, status: statusToProto(update.status), final: final(update.status.state) },
        { metadata: update.metadata },
      ),
    };
  }
  const update = event.artifactUpdate;
  return {
    artifactUpdate: withOptional(
      { taskId: update.taskId, contextId: update.contextId, artifact: artifactToProto(update.artifact) },
      { append: update.append, lastChunk: update.lastChunk, metadata: update.metadata },
    ),
  };
}
