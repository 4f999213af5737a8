// The A2A 1.0 operations (spec 3.1), each declared once with its handler. The handlers call the
// task service; the dispatcher (./dispatch.ts) has already parsed the request and admitted the
// caller (scope, tenant, agent access, rate limit) before a handler runs.
import { A2AError } from '../protocol/errors.ts';
import {
  cancelTaskRequestSchema,
  createPushConfigRequestSchema,
  extendedCardRequestSchema,
  getPushConfigRequestSchema,
  getTaskRequestSchema,
  listPushConfigsRequestSchema,
  listTasksRequestSchema,
  sendMessageRequestSchema,
  subscribeRequestSchema,
} from '../protocol/schemas.ts';
import { isTerminal, type SendMessageRequest } from '../protocol/types.ts';
import { directReplyOfEvent } from '../tasks/direct-reply.ts';
import type { TaskService } from '../tasks/service.ts';
import type { PushConfigs } from '../push/push-configs.ts';
import { defineStream, defineUnary, type OperationCall, type RestRoute } from './definition.ts';

/** PushNotificationNotSupportedError: push is off (push.enabled false). */
export const pushNotSupported = (): A2AError =>
  new A2AError(
    'PUSH_NOTIFICATION_NOT_SUPPORTED',
    'This agent does not send push notifications (capabilities.pushNotifications is false). Use SubscribeToTask or GetTask to follow a task.',
  );

/** The push-config store, or PushNotificationNotSupportedError (the caller was checked first, like for any operation). */
function pushConfigs(service: TaskService): PushConfigs {
  if (service.push === undefined) throw pushNotSupported();
  return service.push;
}

/**
 * What SendMessage refuses before storing anything: media types the agent does not take. (A push
 * config riding on the message is checked by the task service, which stores it with the task.)
 */
async function checkSendRequest(request: SendMessageRequest, call: OperationCall): Promise<void> {
  const { inputModes } = await call.endpoint.cards.cards();
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

const route = (method: RestRoute['method'], path: string): RestRoute => ({ method, path });
const grpc = (method: string, requestType: string, responseType: string) => ({ method, requestType, responseType });

export const sendMessage = defineUnary({
  name: 'SendMessage',
  scope: 'a2a:write',
  request: sendMessageRequestSchema,
  rest: [route('POST', '/message:send')],
  restBody: 'required',
  legacy: { jsonRpcMethod: 'message/send', rest: [route('POST', '/v1/message:send')] },
  grpc: grpc('SendMessage', 'SendMessageRequest', 'SendMessageResponse'),
  startsWork: true,
  async handle(request, call) {
    await checkSendRequest(request, call);
    return call.service.sendMessage(call.owner, request, { grants: call.grants, extensions: call.extensions, trace: call.trace });
  },
});

export const sendStreamingMessage = defineStream({
  name: 'SendStreamingMessage',
  scope: 'a2a:write',
  request: sendMessageRequestSchema,
  rest: [route('POST', '/message:stream')],
  restBody: 'required',
  legacy: { jsonRpcMethod: 'message/stream', rest: [route('POST', '/v1/message:stream')] },
  grpc: grpc('SendStreamingMessage', 'SendMessageRequest', 'StreamResponse'),
  startsWork: true,
  async open(request, call) {
    await checkSendRequest(request, call);
    const start = await call.service.startStreamingMessage(call.owner, request, { grants: call.grants, extensions: call.extensions, trace: call.trace });
    return {
      ...start,
      // The turn is over at a terminal state or when the agent waits for input (DESIGN.md);
      // AUTH_REQUIRED keeps the stream open: the turn resumes after out-of-band credentials.
      closesOn: (state) => isTerminal(state) || state === 'TASK_STATE_INPUT_REQUIRED',
      alreadyEnded: false,
      snapshotAfterSkip: (lastEventId) => call.service.snapshotAfterSkip(call.owner, start.taskId, lastEventId),
      // Only a new task (or a re-send of the message that made one) of an agent that may answer
      // with a Message can turn out to be one; a follow-up's client holds the task already.
      ...(start.snapshot === undefined && call.endpoint.agent.adapter.directMessages === true
        ? { holdForDirectReply: { directReplyOf: directReplyOfEvent } }
        : {}),
    };
  },
});

export const getTask = defineUnary({
  name: 'GetTask',
  scope: 'a2a:read',
  request: getTaskRequestSchema,
  rest: [route('GET', '/tasks/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/get', rest: [route('GET', '/v1/tasks/{id}')] },
  grpc: grpc('GetTask', 'GetTaskRequest', 'Task'),
  // A task's bytes count against the caller's rate like a ListTasks page (limits.requestBytesPerToken).
  handle: (request, call) => call.service.getTask(call.owner, request, call.chargeAnswerBytes),
});

export const listTasks = defineUnary({
  name: 'ListTasks',
  scope: 'a2a:read',
  request: listTasksRequestSchema,
  rest: [route('GET', '/tasks')],
  restBody: 'none',
  grpc: grpc('ListTasks', 'ListTasksRequest', 'ListTasksResponse'),
  // A page's bytes count against the caller's rate like a request body's (limits.requestBytesPerToken).
  handle: (request, call) => call.service.listTasks(call.owner, request, call.chargeAnswerBytes),
});

export const cancelTask = defineUnary({
  name: 'CancelTask',
  scope: 'a2a:write',
  request: cancelTaskRequestSchema,
  rest: [route('POST', '/tasks/{id}:cancel')],
  restBody: 'optional',
  legacy: { jsonRpcMethod: 'tasks/cancel', rest: [route('POST', '/v1/tasks/{id}:cancel')] },
  grpc: grpc('CancelTask', 'CancelTaskRequest', 'Task'),
  handle: (request, call) => call.service.cancelTask(call.owner, request),
});

export const subscribeToTask = defineStream({
  name: 'SubscribeToTask',
  scope: 'a2a:read',
  request: subscribeRequestSchema,
  // The proto maps subscribe to GET, the spec's prose (11.3.2) and the official client to POST.
  rest: [route('POST', '/tasks/{id}:subscribe'), route('GET', '/tasks/{id}:subscribe')],
  restBody: 'optional',
  legacy: { jsonRpcMethod: 'tasks/resubscribe', rest: [route('POST', '/v1/tasks/{id}:subscribe'), route('GET', '/v1/tasks/{id}:subscribe')] },
  grpc: grpc('SubscribeToTask', 'SubscribeToTaskRequest', 'StreamResponse'),
  async open(request, call) {
    const plan = await call.service.subscribe(call.owner, request, call.lastEventId);
    return {
      taskId: request.id,
      snapshot: plan.snapshot,
      skipNote: plan.skipNote,
      afterId: plan.afterId,
      closesOn: isTerminal,
      alreadyEnded: plan.terminal,
      snapshotAfterSkip: (lastEventId) => call.service.snapshotAfterSkip(call.owner, request.id, lastEventId),
    };
  },
});

export const createTaskPushNotificationConfig = defineUnary({
  name: 'CreateTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: createPushConfigRequestSchema,
  rest: [route('POST', '/tasks/{taskId}/pushNotificationConfigs')],
  restBody: 'required',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/set', rest: [route('POST', '/v1/tasks/{taskId}/pushNotificationConfigs')] },
  grpc: grpc('CreateTaskPushNotificationConfig', 'TaskPushNotificationConfig', 'TaskPushNotificationConfig'),
  handle: (request, call) => pushConfigs(call.service).create(call.owner, request),
});

export const getTaskPushNotificationConfig = defineUnary({
  name: 'GetTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: getPushConfigRequestSchema,
  rest: [route('GET', '/tasks/{taskId}/pushNotificationConfigs/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/get', rest: [route('GET', '/v1/tasks/{taskId}/pushNotificationConfigs/{id}')] },
  grpc: grpc('GetTaskPushNotificationConfig', 'GetTaskPushNotificationConfigRequest', 'TaskPushNotificationConfig'),
  handle: (request, call) => pushConfigs(call.service).get(call.owner, request),
});

export const listTaskPushNotificationConfigs = defineUnary({
  name: 'ListTaskPushNotificationConfigs',
  scope: 'a2a:push',
  request: listPushConfigsRequestSchema,
  rest: [route('GET', '/tasks/{taskId}/pushNotificationConfigs')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/list', rest: [route('GET', '/v1/tasks/{taskId}/pushNotificationConfigs')] },
  grpc: grpc('ListTaskPushNotificationConfigs', 'ListTaskPushNotificationConfigsRequest', 'ListTaskPushNotificationConfigsResponse'),
  handle: (request, call) => pushConfigs(call.service).list(call.owner, request),
});

export const deleteTaskPushNotificationConfig = defineUnary({
  name: 'DeleteTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: getPushConfigRequestSchema,
  rest: [route('DELETE', '/tasks/{taskId}/pushNotificationConfigs/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/delete', rest: [route('DELETE', '/v1/tasks/{taskId}/pushNotificationConfigs/{id}')] },
  grpc: grpc('DeleteTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfigRequest', 'google.protobuf.Empty'),
  handle: (request, call) => pushConfigs(call.service).delete(call.owner, request),
});

export const getExtendedAgentCard = defineUnary({
  name: 'GetExtendedAgentCard',
  scope: 'a2a:read',
  request: extendedCardRequestSchema,
  rest: [route('GET', '/extendedAgentCard')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'agent/getAuthenticatedExtendedCard', rest: [route('GET', '/v1/card')] },
  grpc: grpc('GetExtendedAgentCard', 'GetExtendedAgentCardRequest', 'AgentCard'),
  async handle(_request, call) {
    const { extended } = await call.endpoint.cards.cards();
    if (extended !== undefined && call.principal !== undefined) return extended.card;
    throw new A2AError(
      'UNSUPPORTED_OPERATION',
      'This agent has no extended agent card (capabilities.extendedAgentCard is false); the public card at /.well-known/agent-card.json is complete.',
    );
  },
});

/** The A2A 1.0 operations, in the order of the spec (3.1.1 – 3.1.11). */
export const A2A_OPERATIONS = [
  sendMessage,
  sendStreamingMessage,
  getTask,
  listTasks,
  cancelTask,
  subscribeToTask,
  createTaskPushNotificationConfig,
  getTaskPushNotificationConfig,
  listTaskPushNotificationConfigs,
  deleteTaskPushNotificationConfig,
  getExtendedAgentCard,
] as const;
