// The A2A 1.0 operations (spec 3.1), each declared once and answered by the gateway's handler
// (src/tasks/a2a-handler.ts): the declaration says how a face reaches it, the handler what it
// does. The dispatcher (./dispatch.ts) has already parsed the request and admitted the caller
// (scope, tenant, agent access, rate limit) before a handler runs; the admitted call is the
// handler's Caller.
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
import { defineStream, defineUnary, type RestRoute } from './definition.ts';

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
  handle: (request, call) => call.service.sendMessage(call, request),
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
  open: (request, call) => call.service.sendStreamingMessage(call, request),
});

export const getTask = defineUnary({
  name: 'GetTask',
  scope: 'a2a:read',
  request: getTaskRequestSchema,
  rest: [route('GET', '/tasks/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/get', rest: [route('GET', '/v1/tasks/{id}')] },
  grpc: grpc('GetTask', 'GetTaskRequest', 'Task'),
  handle: (request, call) => call.service.getTask(call, request),
});

export const listTasks = defineUnary({
  name: 'ListTasks',
  scope: 'a2a:read',
  request: listTasksRequestSchema,
  rest: [route('GET', '/tasks')],
  restBody: 'none',
  grpc: grpc('ListTasks', 'ListTasksRequest', 'ListTasksResponse'),
  handle: (request, call) => call.service.listTasks(call, request),
});

export const cancelTask = defineUnary({
  name: 'CancelTask',
  scope: 'a2a:write',
  request: cancelTaskRequestSchema,
  rest: [route('POST', '/tasks/{id}:cancel')],
  restBody: 'optional',
  legacy: { jsonRpcMethod: 'tasks/cancel', rest: [route('POST', '/v1/tasks/{id}:cancel')] },
  grpc: grpc('CancelTask', 'CancelTaskRequest', 'Task'),
  handle: (request, call) => call.service.cancelTask(call, request),
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
  open: (request, call) => call.service.subscribeToTask(call, request),
});

export const createTaskPushNotificationConfig = defineUnary({
  name: 'CreateTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: createPushConfigRequestSchema,
  rest: [route('POST', '/tasks/{taskId}/pushNotificationConfigs')],
  restBody: 'required',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/set', rest: [route('POST', '/v1/tasks/{taskId}/pushNotificationConfigs')] },
  grpc: grpc('CreateTaskPushNotificationConfig', 'TaskPushNotificationConfig', 'TaskPushNotificationConfig'),
  handle: (request, call) => call.service.createTaskPushNotificationConfig(call, request),
});

export const getTaskPushNotificationConfig = defineUnary({
  name: 'GetTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: getPushConfigRequestSchema,
  rest: [route('GET', '/tasks/{taskId}/pushNotificationConfigs/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/get', rest: [route('GET', '/v1/tasks/{taskId}/pushNotificationConfigs/{id}')] },
  grpc: grpc('GetTaskPushNotificationConfig', 'GetTaskPushNotificationConfigRequest', 'TaskPushNotificationConfig'),
  handle: (request, call) => call.service.getTaskPushNotificationConfig(call, request),
});

export const listTaskPushNotificationConfigs = defineUnary({
  name: 'ListTaskPushNotificationConfigs',
  scope: 'a2a:push',
  request: listPushConfigsRequestSchema,
  rest: [route('GET', '/tasks/{taskId}/pushNotificationConfigs')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/list', rest: [route('GET', '/v1/tasks/{taskId}/pushNotificationConfigs')] },
  grpc: grpc('ListTaskPushNotificationConfigs', 'ListTaskPushNotificationConfigsRequest', 'ListTaskPushNotificationConfigsResponse'),
  handle: (request, call) => call.service.listTaskPushNotificationConfigs(call, request),
});

export const deleteTaskPushNotificationConfig = defineUnary({
  name: 'DeleteTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: getPushConfigRequestSchema,
  rest: [route('DELETE', '/tasks/{taskId}/pushNotificationConfigs/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/delete', rest: [route('DELETE', '/v1/tasks/{taskId}/pushNotificationConfigs/{id}')] },
  grpc: grpc('DeleteTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfigRequest', 'google.protobuf.Empty'),
  handle: (request, call) => call.service.deleteTaskPushNotificationConfig(call, request),
});

export const getExtendedAgentCard = defineUnary({
  name: 'GetExtendedAgentCard',
  scope: 'a2a:read',
  request: extendedCardRequestSchema,
  rest: [route('GET', '/extendedAgentCard')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'agent/getAuthenticatedExtendedCard', rest: [route('GET', '/v1/card')] },
  grpc: grpc('GetExtendedAgentCard', 'GetExtendedAgentCardRequest', 'AgentCard'),
  handle: (_request, call) => call.service.getExtendedAgentCard(call),
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
