// The A2A operations (spec 3.1) as one interface, one method per operation, like the request
// handler of the official SDKs. Every face of the gateway (JSON-RPC, HTTP+JSON, gRPC, the 0.3
// layer, and the next ones) parses its wire shape, admits the caller and calls this; nothing
// a face does decides anything about a task. The use cases behind it live beside this file,
// one per operation group; ./service.ts puts them together.
import type { TaskReserver } from '../consumers/consumer-gate.ts';
import type { Principal } from '../auth/principal.ts';
import type { HeldTaskFeed } from '../events/held-feed.ts';
import type { TaskFeed, TaskFeedConsumer } from '../events/task-feed.ts';
import type { StreamPlan } from '../operations/stream-plan.ts';
import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '../protocol/types.ts';
import type { Owner } from '../store/task-store.ts';
import type { GenerationParams } from '../extensions/task-generations.ts';
import type { TraceContext } from '../telemetry/spans.ts';

/** What the use cases read of the agent whose URLs a request came to (an AgentEndpoint). */
export interface CallerEndpoint {
  agent: { adapter: { readonly directMessages?: boolean } };
  cards: { cards(): Promise<{ inputModes: readonly string[]; extended: { card: AgentCard } | undefined }> };
}

/** Who calls, as the face admitted them (scope, tenant, agent access checked, one rate token taken). */
export interface Caller {
  /** Undefined when authentication is off. */
  principal: Principal | undefined;
  /** Whose the request is: the caller with the agent whose URLs it came to. */
  owner: Owner;
  /** Every scope the caller's credentials granted (what the adapter sees as ctx.caller.scopes). */
  grants: readonly string[];
  /** The extensions this request activated (A2A-Extensions ∩ what the agent declares). */
  extensions: readonly string[];
  /** The trace context of the request's span (tracing on): the turns it opens continue it. */
  trace: TraceContext;
  /** The agent whose URLs the request came to: its cards and adapter. */
  endpoint: CallerEndpoint;
  /** The SSE Last-Event-ID a stream resumes after, when the client sent one. */
  lastEventId: string | undefined;
  /**
   * The binding serializes the answer with serializeAnswer (src/protocol/json-fragment.ts), and
   * a stream's Task snapshots with serializeFramed, and nothing else reads them: a large task's
   * artifacts may come as a JsonFragment built off the event loop. False where the answer is
   * translated (0.3, gRPC, MCP): they get parsed artifacts.
   */
  answersSpliced?: boolean;
  /** Charges a large answer's bytes to the caller's rate (limits.requestBytesPerToken): its next requests wait. */
  chargeAnswerBytes: (bytes: number) => Promise<void>;
  /**
   * Answers weighing more than `payAfterBytes` are paid before they are built (`pay` throws 429
   * when the caller's rate cannot pay now). Absent, or 0, when the caller's rate is off.
   */
  largeAnswers?: { payAfterBytes: number; pay: (bytes: number) => Promise<void> };
  /** What the request asks of task generations, when it activated that extension (src/extensions/task-generations.ts). */
  generations?: GenerationParams;
  /** Reserves a new task under the caller's consumer plan (src/consumers); absent: the caller is no consumer's. */
  reserveTask?: TaskReserver;
}

export type CreatePushConfigRequest = TaskPushNotificationConfig & { taskId: string; tenant?: string };
export interface PushConfigRequest {
  taskId: string;
  id: string;
  tenant?: string;
}
export interface ListPushConfigsRequest {
  taskId: string;
  tenant?: string;
  pageSize?: number;
  pageToken?: string;
}

/** Where a followed task's events go; see openTaskFeed (src/events/task-feed.ts) for each callback. */
export interface TaskFollower extends TaskFeedConsumer {
  taskId: string;
  /** The task's events watched since before it was created (StreamPlan.held): delivered from there, no buffer read. */
  held?: HeldTaskFeed;
}

export interface A2AHandler {
  sendMessage(caller: Caller, request: SendMessageRequest): Promise<SendMessageResponse>;
  /** Stores the message and answers where its stream starts and what ends it; followTask delivers it. */
  sendStreamingMessage(caller: Caller, request: SendMessageRequest): Promise<StreamPlan>;
  getTask(caller: Caller, request: GetTaskRequest): Promise<Task>;
  listTasks(caller: Caller, request: ListTasksRequest): Promise<ListTasksResponse>;
  cancelTask(caller: Caller, request: CancelTaskRequest): Promise<Task>;
  /** Where the subscription starts (caller.lastEventId resumes) and what ends it; followTask delivers it. */
  subscribeToTask(caller: Caller, request: SubscribeToTaskRequest): Promise<StreamPlan>;
  createTaskPushNotificationConfig(caller: Caller, request: CreatePushConfigRequest): Promise<TaskPushNotificationConfig>;
  getTaskPushNotificationConfig(caller: Caller, request: PushConfigRequest): Promise<TaskPushNotificationConfig>;
  listTaskPushNotificationConfigs(caller: Caller, request: ListPushConfigsRequest): Promise<{ configs: TaskPushNotificationConfig[]; nextPageToken: string }>;
  deleteTaskPushNotificationConfig(caller: Caller, request: PushConfigRequest): Promise<Record<string, never>>;
  getExtendedAgentCard(caller: Caller): Promise<AgentCard>;
  /**
   * The events of a stream the two streaming operations planned, in order, gap-free, from its
   * afterId: what a face writes to its connection. Closing the feed only drops the listener.
   */
  followTask(follower: TaskFollower): TaskFeed;
}
