// The A2A operations as both bindings call them: validate params, resolve the caller, check
// capabilities, call the task service. JSON-RPC and HTTP+JSON differ only in how they get
// params in and results or errors out.
import type { AgentEndpoint } from '../agents/agent-endpoint.ts';
import { anonymousPrincipal, ownerOf, type Principal } from '../auth/principal.ts';
import { requireAgentAccess, requireScope, requireTenant } from '../auth/scopes.ts';
import type { RateLimiter } from '../limits/rate-limiter.ts';
import type { Owner } from '../store/task-store.ts';
import { A2AError } from '../protocol/errors.ts';
import {
  cancelTaskRequestSchema,
  createPushConfigRequestSchema,
  extendedCardRequestSchema,
  getPushConfigRequestSchema,
  getTaskRequestSchema,
  listPushConfigsRequestSchema,
  listAssignmentsRequestSchema,
  listDeadLettersRequestSchema,
  replayDeadLetterRequestSchema,
  createScheduleRequestSchema,
  listSchedulesRequestSchema,
  scheduleIdRequestSchema,
  listTasksRequestSchema,
  parseParams,
  sendMessageRequestSchema,
  subscribeRequestSchema,
} from '../protocol/schemas.ts';
import { isTerminal, type SendMessageRequest, type Task, type TaskState } from '../protocol/types.ts';
import type { TaskService } from '../tasks/service.ts';
import type { PushConfigs } from '../push/push-configs.ts';
import type { PushDeadLetters } from '../push/dead-letters.ts';
import type { ScheduleService } from '../schedules/schedule-service.ts';

export const UNARY_OPERATIONS = [
  'SendMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
  // Gateway extension: a coordinator's assignments.
  'ListTaskAssignments',
  // Gateway extension (operators): dead-lettered push deliveries.
  'ListPushDeadLetters',
  'ReplayPushDeadLetter',
  // Gateway extension: schedules.
  'CreateSchedule',
  'GetSchedule',
  'ListSchedules',
  'PauseSchedule',
  'ResumeSchedule',
  'DeleteSchedule',
] as const;
export const STREAM_OPERATIONS = ['SendStreamingMessage', 'SubscribeToTask'] as const;

export type UnaryOperation = (typeof UNARY_OPERATIONS)[number];
export type StreamOperation = (typeof STREAM_OPERATIONS)[number];

export const isUnaryOperation = (name: string): name is UnaryOperation => (UNARY_OPERATIONS as readonly string[]).includes(name);
export const isStreamOperation = (name: string): name is StreamOperation => (STREAM_OPERATIONS as readonly string[]).includes(name);

export interface OperationDeps {
  service: TaskService;
  /** The agent whose URLs the request came to: its tasks, cards, limits and input policy. */
  endpoint: AgentEndpoint;
  rateLimiter: RateLimiter;
}

/**
 * The owner an operation acts for: scope, tenant and access to the agent checked first
 * (refusals cost nothing), then one token from the caller's rate bucket for this agent.
 */
async function ownerFor(operation: string, principal: Principal | undefined, tenant: string | undefined, deps: OperationDeps): Promise<Owner> {
  const caller = principal ?? anonymousPrincipal(tenant);
  const { agent } = deps.endpoint;
  requireScope(caller, operation);
  requireTenant(caller, tenant);
  requireAgentAccess(caller, agent.name, agent.settings.scopes);
  const owner = ownerOf(caller, agent.name);
  await deps.rateLimiter.take(owner, agent.settings.limits);
  return owner;
}

/** What a caller's credentials grant, as the adapter sees them (everything when authentication is off). */
const grantsOf = (principal: Principal | undefined): string[] => [...(principal ?? anonymousPrincipal(undefined)).grants];

export interface StreamPlan {
  taskId: string;
  snapshot: { task: Task; eventId: string } | undefined;
  afterId: string;
  closesOn: (state: TaskState) => boolean;
  /** Nothing will follow: the client already holds the terminal event. */
  alreadyEnded: boolean;
}

const pushNotSupported = (): A2AError =>
  new A2AError(
    'PUSH_NOTIFICATION_NOT_SUPPORTED',
    'This agent does not send push notifications (capabilities.pushNotifications is false). Use SubscribeToTask or GetTask to follow a task.',
  );

/** The push-config operations, or PushNotificationNotSupportedError (after the caller was checked). */
function pushConfigs(service: TaskService): PushConfigs {
  if (service.push === undefined) throw pushNotSupported();
  return service.push;
}

function deadLetters(service: TaskService): PushDeadLetters {
  if (service.pushDeadLetters === undefined) throw pushNotSupported();
  return service.pushDeadLetters;
}

function schedules(service: TaskService): ScheduleService {
  if (service.schedules === undefined) {
    throw new A2AError('UNSUPPORTED_OPERATION', 'This gateway offers no schedules (schedules.enabled is false; the card does not declare the schedules extension).');
  }
  return service.schedules;
}

function checkSendRequest(request: SendMessageRequest, inputModes: readonly string[]): void {
  if (inputModes.includes('*/*')) return;
  request.message.parts.forEach((part, index) => {
    if (part.mediaType !== undefined && !inputModes.includes(part.mediaType)) {
      throw new A2AError(
        'CONTENT_TYPE_NOT_SUPPORTED',
        `message.parts[${index}] has media type ${part.mediaType}, which this agent does not accept; it accepts ${inputModes.join(', ')}.`,
        { metadata: { mediaType: part.mediaType, field: `message.parts[${index}].mediaType` } },
      );
    }
  });
}

/** Runs an operation that answers with one JSON value. */
export async function runUnaryOperation(
  operation: UnaryOperation,
  params: unknown,
  principal: Principal | undefined,
  deps: OperationDeps,
): Promise<unknown> {
  const { service } = deps;
  switch (operation) {
    case 'SendMessage': {
      const request = parseParams(sendMessageRequestSchema, params) as SendMessageRequest;
      checkSendRequest(request, (await deps.endpoint.cards.cards()).inputModes);
      return service.sendMessage(await ownerFor(operation, principal, request.tenant, deps), request, grantsOf(principal));
    }
    case 'GetTask': {
      const request = parseParams(getTaskRequestSchema, params);
      return service.getTask(await ownerFor(operation, principal, request.tenant, deps), request);
    }
    case 'ListTasks': {
      const request = parseParams(listTasksRequestSchema, params);
      return service.listTasks(await ownerFor(operation, principal, request.tenant, deps), request);
    }
    case 'ListTaskAssignments': {
      const request = parseParams(listAssignmentsRequestSchema, params);
      return service.listAssignments(await ownerFor(operation, principal, request.tenant, deps), request.id);
    }
    case 'CancelTask': {
      const request = parseParams(cancelTaskRequestSchema, params);
      return service.cancelTask(await ownerFor(operation, principal, request.tenant, deps), request);
    }
    case 'CreateTaskPushNotificationConfig': {
      const request = parseParams(createPushConfigRequestSchema, params);
      const owner = await ownerFor(operation, principal, request.tenant, deps);
      return pushConfigs(service).create(owner, request);
    }
    case 'GetTaskPushNotificationConfig':
    case 'DeleteTaskPushNotificationConfig': {
      const request = parseParams(getPushConfigRequestSchema, params);
      const owner = await ownerFor(operation, principal, request.tenant, deps);
      return operation === 'GetTaskPushNotificationConfig' ? pushConfigs(service).get(owner, request) : pushConfigs(service).delete(owner, request);
    }
    case 'ListTaskPushNotificationConfigs': {
      const request = parseParams(listPushConfigsRequestSchema, params);
      const owner = await ownerFor(operation, principal, request.tenant, deps);
      return pushConfigs(service).list(owner, request);
    }
    case 'ListPushDeadLetters': {
      const request = parseParams(listDeadLettersRequestSchema, params);
      const owner = await ownerFor(operation, principal, request.tenant, deps);
      return deadLetters(service).list(owner.agent, request);
    }
    case 'ReplayPushDeadLetter': {
      const request = parseParams(replayDeadLetterRequestSchema, params);
      const owner = await ownerFor(operation, principal, request.tenant, deps);
      return deadLetters(service).replay(owner.agent, request.id);
    }
    case 'CreateSchedule': {
      const request = parseParams(createScheduleRequestSchema, params);
      return schedules(service).create(await ownerFor(operation, principal, request.tenant, deps), request);
    }
    case 'ListSchedules': {
      const request = parseParams(listSchedulesRequestSchema, params);
      return schedules(service).list(await ownerFor(operation, principal, request.tenant, deps), request);
    }
    case 'GetSchedule':
    case 'PauseSchedule':
    case 'ResumeSchedule':
    case 'DeleteSchedule': {
      const request = parseParams(scheduleIdRequestSchema, params);
      const owner = await ownerFor(operation, principal, request.tenant, deps);
      const scheduling = schedules(service);
      if (operation === 'GetSchedule') return scheduling.get(owner, request.id);
      if (operation === 'PauseSchedule') return scheduling.pause(owner, request.id);
      if (operation === 'ResumeSchedule') return scheduling.resume(owner, request.id);
      return scheduling.delete(owner, request.id);
    }
    case 'GetExtendedAgentCard': {
      const request = parseParams(extendedCardRequestSchema, params);
      const { extended } = await deps.endpoint.cards.cards();
      if (extended !== undefined && principal !== undefined) {
        await ownerFor(operation, principal, request?.tenant, deps);
        return extended.card;
      }
      throw new A2AError(
        'UNSUPPORTED_OPERATION',
        'This agent has no extended agent card (capabilities.extendedAgentCard is false); the public card at /.well-known/agent-card.json is complete.',
      );
    }
  }
}

/**
 * Validates and starts a streaming operation. Errors thrown here happen before any SSE byte
 * is written, so the binding can still answer with an ordinary error response.
 */
export async function startStreamOperation(
  operation: StreamOperation,
  params: unknown,
  lastEventId: string | undefined,
  principal: Principal | undefined,
  deps: OperationDeps,
): Promise<StreamPlan> {
  const { service } = deps;
  if (operation === 'SendStreamingMessage') {
    const request = parseParams(sendMessageRequestSchema, params) as SendMessageRequest;
    checkSendRequest(request, (await deps.endpoint.cards.cards()).inputModes);
    const start = await service.startStreamingMessage(await ownerFor(operation, principal, request.tenant, deps), request, grantsOf(principal));
    // The turn is over at a terminal state or when the agent waits for input (DESIGN.md);
    // AUTH_REQUIRED keeps the stream open: the turn resumes after out-of-band credentials.
    return { ...start, closesOn: (state) => isTerminal(state) || state === 'TASK_STATE_INPUT_REQUIRED', alreadyEnded: false };
  }
  const request = parseParams(subscribeRequestSchema, params);
  const plan = await service.subscribe(await ownerFor(operation, principal, request.tenant, deps), request, lastEventId);
  return { taskId: request.id, snapshot: plan.snapshot, afterId: plan.afterId, closesOn: isTerminal, alreadyEnded: plan.terminal };
}
