// A2A 1.0 wire objects in their ProtoJSON form (camelCase fields, SCREAMING_SNAKE enums),
// exactly as they cross the JSON-RPC and HTTP+JSON bindings.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const TASK_STATES = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
]);
export const INTERRUPTED_STATES: ReadonlySet<TaskState> = new Set([
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
]);

export const isTerminal = (state: TaskState): boolean => TERMINAL_STATES.has(state);
export const isInterrupted = (state: TaskState): boolean => INTERRUPTED_STATES.has(state);

export type Role = 'ROLE_USER' | 'ROLE_AGENT';

export interface Part {
  text?: string;
  raw?: string; // base64
  url?: string;
  data?: JsonValue;
  metadata?: JsonObject;
  filename?: string;
  mediaType?: string;
}

export interface Message {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: Role;
  parts: Part[];
  metadata?: JsonObject;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: JsonObject;
  extensions?: string[];
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  timestamp?: string;
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: JsonObject;
}

export interface TaskStatusUpdateEvent {
  taskId: string;
  contextId: string;
  status: TaskStatus;
  metadata?: JsonObject;
}

export interface TaskArtifactUpdateEvent {
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: JsonObject;
}

/** One element of a stream: exactly one of its fields is set. */
export type StreamResponse =
  | { task: Task }
  | { message: Message }
  | { statusUpdate: TaskStatusUpdateEvent }
  | { artifactUpdate: TaskArtifactUpdateEvent };

export interface TaskPushNotificationConfig {
  tenant?: string;
  id?: string;
  taskId?: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
}

export interface SendMessageConfiguration {
  acceptedOutputModes?: string[];
  taskPushNotificationConfig?: TaskPushNotificationConfig;
  historyLength?: number;
  returnImmediately?: boolean;
}

export interface SendMessageRequest {
  tenant?: string;
  message: Message;
  configuration?: SendMessageConfiguration;
  metadata?: JsonObject;
}

export interface GetTaskRequest {
  tenant?: string;
  id: string;
  historyLength?: number;
}

export interface ListTasksRequest {
  tenant?: string;
  contextId?: string;
  status?: TaskState;
  pageSize?: number;
  pageToken?: string;
  historyLength?: number;
  statusTimestampAfter?: string;
  includeArtifacts?: boolean;
}

export interface ListTasksResponse {
  tasks: Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

export interface CancelTaskRequest {
  tenant?: string;
  id: string;
  metadata?: JsonObject;
}

export interface SubscribeToTaskRequest {
  tenant?: string;
  id: string;
}

export type SendMessageResponse = { task: Task } | { message: Message };

export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
}

export interface AgentInterface {
  url: string;
  protocolBinding: string;
  tenant?: string;
  protocolVersion: string;
}

export interface AgentCard {
  name: string;
  description: string;
  supportedInterfaces: AgentInterface[];
  provider?: { url: string; organization: string };
  version: string;
  documentationUrl?: string;
  capabilities: {
    streaming?: boolean;
    pushNotifications?: boolean;
    extendedAgentCard?: boolean;
    extensions?: { uri: string; description?: string; required?: boolean; params?: JsonObject }[];
  };
  securitySchemes?: Record<string, JsonObject>;
  securityRequirements?: { schemes: Record<string, { list: string[] }> }[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
  signatures?: { protected: string; signature: string; header?: JsonObject }[];
  iconUrl?: string;
}

/** One JWS over the card's canonical form (spec 8.4.2); its payload is detached, so verifiers rebuild it from the card. */
export interface AgentCardSignature {
  /** base64url of the JSON protected header (alg, typ "JOSE", kid, optional jku). */
  protected: string;
  signature: string;
  header?: JsonObject;
}

// Security declarations as ProtoJSON writes them. Type aliases rather than interfaces so that
// they stay assignable to JsonObject, which AgentCard.securitySchemes holds.

export type APIKeySecurityScheme = {
  description?: string;
  /** "query", "header" or "cookie". */
  location: string;
  name: string;
};

export type HTTPAuthSecurityScheme = {
  description?: string;
  /** An IANA HTTP authentication scheme, e.g. "Bearer". */
  scheme: string;
  bearerFormat?: string;
};

/** A oneof in the proto: exactly one member is set. */
export type SecurityScheme =
  | { apiKeySecurityScheme: APIKeySecurityScheme }
  | { httpAuthSecurityScheme: HTTPAuthSecurityScheme }
  | { oauth2SecurityScheme: JsonObject }
  | { openIdConnectSecurityScheme: { description?: string; openIdConnectUrl: string } }
  | { mtlsSecurityScheme: { description?: string } };

export type StringList = { list: string[] };

/** Scheme name (a key of AgentCard.securitySchemes) → the scopes it needs. */
export type SecurityRequirement = { schemes: Record<string, StringList> };
