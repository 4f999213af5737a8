// What storing a sent message needs, whether it starts a task (./new-task.ts) or continues one
// (./follow-up.ts): the dependencies, the refusals both give, and the checks both run first.
import type { TaskReserver } from '../consumers/consumer-gate.ts';
import type { TraceContext } from '../telemetry/spans.ts';
import type { Agent, Agents } from '../agents/agents.ts';
import type { Delegator } from '../coordination/delegator.ts';
import type { ByteRates } from '../limits/byte-rates.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import type { StorageQuota } from '../limits/storage-quota.ts';
import { A2AError } from '../protocol/errors.ts';
import type { Message, SendMessageRequest, Task } from '../protocol/types.ts';
import type { PushConfigs } from '../push/push-configs.ts';
import type { StoredPushConfig } from '../push/push-config.ts';
import type { OwedTake } from '../store/limits/token-buckets.ts';
import type { Owner, TaskRead, TaskStore } from '../store/task-store.ts';
import type { TurnQueue } from './turn-queue.ts';

export interface IntakeDeps {
  store: TaskStore;
  turns: TurnQueue;
  agents: Agents;
  delegator: Delegator;
  idempotencyTtlSeconds: number;
  push: PushConfigs | undefined;
  /** Puts the owner's subscriptions on each new task; undefined when push notifications are off. */
  subscriptions?: { prefetch(owner: Owner): void; applyToNewTask(owner: Owner, taskId: string, contextId: string): Promise<void> };
  quota: StorageQuota | undefined;
  byteRates: ByteRates | undefined;
}

/** What the request that sends a message carried for the adapter: ctx.caller.scopes and ctx.extensions. */
export interface SenderContext {
  /** Every scope the caller's credentials granted. */
  grants: readonly string[];
  /** The extensions the request activated. */
  extensions: readonly string[];
  /** The trace context of the request's span (tracing on): the turn the message opens continues it. */
  trace?: TraceContext;
  /** A message to an existing task: refused unless the task is at this generation (task-generations extension). */
  expectedGeneration?: number | undefined;
  /** Reserves a new task under the caller's consumer plan before it is stored (src/consumers). */
  reserveTask?: TaskReserver;
  /** A follow-up's snapshot may hold a large task's artifacts as spliced bytes (Caller.answersSpliced). */
  answersSpliced?: boolean;
}

/** A stored message: its task, and where a stream of it starts. */
export interface Submission {
  taskId: string;
  contextId: string;
  afterId: string;
  /** Set for a follow-up: the task as it stood right after the message was accepted. */
  snapshot: { task: Task; eventId: string } | undefined;
  /** Set for a task this message created: the read a returnImmediately answer is (createdTaskRead). */
  created?: TaskRead;
  /**
   * A follow-up the caller watched since before its accept, which resumed the task: no snapshot
   * was read; `afterId` is the accept's own event, after which the turn's events come.
   */
  watched?: true;
}

/** The agent an owner's tasks belong to (owners are made for configured agents only). */
export function agentOf(agents: Agents, owner: Owner): Agent {
  const agent = agents.get(owner.agent);
  if (agent === undefined) throw new Error(`No agent "${owner.agent}" is configured.`);
  return agent;
}

export function tooManyActive(active: number, limit: number): A2AError {
  return new LimitExceededError(
    'limits.maxActiveTasks',
    'RESOURCE_EXHAUSTED',
    `You have ${active} tasks of this agent queued or running, the limit is ${limit} (limits.maxActiveTasks, or the agent's limits); nothing was stored. Wait for one to finish, or cancel one, then retry.`,
    { retryAfterSeconds: 1, metadata: { reason: 'ACTIVE_TASK_LIMIT', limit: String(limit) } },
  );
}

/** A messageId used before for a message with other content: refused, since taking either silently would lose one. */
export function messageIdReused(messageId: string, taskId: string): A2AError {
  return new A2AError(
    'ALREADY_EXISTS',
    `messageId ${JSON.stringify(messageId)} was already sent with other content (text, parts, task, context or references) and belongs to task ${taskId}; nothing was stored. A retry must resend the same message; a new message needs a new messageId.`,
    {
      metadata: { reason: 'MESSAGE_ID_REUSED', messageId, taskId },
      violations: [{ field: 'message.messageId', description: 'was already used for a message with other content' }],
    },
  );
}

/**
 * A config riding on SendMessage (configuration.taskPushNotificationConfig), checked before
 * anything is stored. Its id is derived from the messageId when none is given, so a re-sent
 * message attaches the same config again instead of a second one.
 */
export async function preparePushConfig(push: PushConfigs | undefined, request: SendMessageRequest, taskId: string): Promise<StoredPushConfig | undefined> {
  const input = request.configuration?.taskPushNotificationConfig;
  if (input === undefined) return undefined;
  if (push === undefined) {
    throw new A2AError('PUSH_NOTIFICATION_NOT_SUPPORTED', 'This agent does not send push notifications (capabilities.pushNotifications is false); send the message without configuration.taskPushNotificationConfig.');
  }
  const id = input.id ?? `m-${request.message.messageId.replace(/[^A-Za-z0-9_.~-]/g, '_').slice(0, 120)}`;
  return push.prepare(taskId, { ...input, id }, 'configuration.taskPushNotificationConfig.');
}

/**
 * Charges what storing `message` takes (its copies, as the quota counts them) to the owner's
 * storage byte rate, refusing before anything is stored. Its JSON and JSON bytes, when it
 * counted them (the quota's charge and the store reuse them).
 */
export async function chargeStoredBytes(
  byteRates: ByteRates | undefined,
  owner: Owner,
  message: Message,
  copies: (messageBytes: number) => number,
): Promise<{ json: string; bytes: number } | undefined> {
  const owed = owedStoredBytes(byteRates, owner, message, copies);
  if (owed?.take !== undefined) await byteRates?.takeOwed(owed.take);
  return owed;
}

/**
 * What storing `message` owes the owner's storage byte rate, for a new task's claim to take in
 * its own call (createTask's storedBytes): its JSON and JSON bytes, and the take with its refusal.
 */
export function owedStoredBytes(
  byteRates: ByteRates | undefined,
  owner: Owner,
  message: Message,
  copies: (messageBytes: number) => number,
): { json: string; bytes: number; take: OwedTake | undefined } | undefined {
  if (byteRates === undefined || byteRates.limits.storedBytesPerSecond <= 0) return undefined;
  const json = JSON.stringify(message);
  const bytes = Buffer.byteLength(json);
  return { json, bytes, take: byteRates.storedTake(owner, bytes * copies(bytes)) };
}
