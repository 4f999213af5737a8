// The A2A 1.0 operations (spec 3.1), as the bindings expose them. Their handlers are in
// src/operations/a2a-operations.ts.
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
} from '../schemas.ts';
import { streamSpec, unarySpec, type GrpcMapping, type OperationSpec, type RestRoute } from './spec.ts';

const route = (method: RestRoute['method'], path: string): RestRoute => ({ method, path });
const grpc = (method: string, requestType: string, responseType: string): GrpcMapping => ({ method, requestType, responseType });

export const sendMessage = unarySpec({
  name: 'SendMessage',
  scope: 'a2a:write',
  request: sendMessageRequestSchema,
  rest: [route('POST', '/message:send')],
  restBody: 'required',
  legacy: { jsonRpcMethod: 'message/send', rest: [route('POST', '/v1/message:send')] },
  grpc: grpc('SendMessage', 'SendMessageRequest', 'SendMessageResponse'),
  startsWork: true,
});

export const sendStreamingMessage = streamSpec({
  name: 'SendStreamingMessage',
  scope: 'a2a:write',
  request: sendMessageRequestSchema,
  rest: [route('POST', '/message:stream')],
  restBody: 'required',
  legacy: { jsonRpcMethod: 'message/stream', rest: [route('POST', '/v1/message:stream')] },
  grpc: grpc('SendStreamingMessage', 'SendMessageRequest', 'StreamResponse'),
  startsWork: true,
});

export const getTask = unarySpec({
  name: 'GetTask',
  scope: 'a2a:read',
  request: getTaskRequestSchema,
  rest: [route('GET', '/tasks/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/get', rest: [route('GET', '/v1/tasks/{id}')] },
  grpc: grpc('GetTask', 'GetTaskRequest', 'Task'),
});

export const listTasks = unarySpec({
  name: 'ListTasks',
  scope: 'a2a:read',
  request: listTasksRequestSchema,
  rest: [route('GET', '/tasks')],
  restBody: 'none',
  grpc: grpc('ListTasks', 'ListTasksRequest', 'ListTasksResponse'),
});

export const cancelTask = unarySpec({
  name: 'CancelTask',
  scope: 'a2a:write',
  request: cancelTaskRequestSchema,
  rest: [route('POST', '/tasks/{id}:cancel')],
  restBody: 'optional',
  legacy: { jsonRpcMethod: 'tasks/cancel', rest: [route('POST', '/v1/tasks/{id}:cancel')] },
  grpc: grpc('CancelTask', 'CancelTaskRequest', 'Task'),
});

export const subscribeToTask = streamSpec({
  name: 'SubscribeToTask',
  scope: 'a2a:read',
  request: subscribeRequestSchema,
  // The proto maps subscribe to GET, the spec's prose (11.3.2) and the official client to POST.
  rest: [route('POST', '/tasks/{id}:subscribe'), route('GET', '/tasks/{id}:subscribe')],
  restBody: 'optional',
  legacy: { jsonRpcMethod: 'tasks/resubscribe', rest: [route('POST', '/v1/tasks/{id}:subscribe'), route('GET', '/v1/tasks/{id}:subscribe')] },
  grpc: grpc('SubscribeToTask', 'SubscribeToTaskRequest', 'StreamResponse'),
});

export const createTaskPushNotificationConfig = unarySpec({
  name: 'CreateTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: createPushConfigRequestSchema,
  rest: [route('POST', '/tasks/{taskId}/pushNotificationConfigs')],
  restBody: 'required',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/set', rest: [route('POST', '/v1/tasks/{taskId}/pushNotificationConfigs')] },
  grpc: grpc('CreateTaskPushNotificationConfig', 'TaskPushNotificationConfig', 'TaskPushNotificationConfig'),
});

export const getTaskPushNotificationConfig = unarySpec({
  name: 'GetTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: getPushConfigRequestSchema,
  rest: [route('GET', '/tasks/{taskId}/pushNotificationConfigs/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/get', rest: [route('GET', '/v1/tasks/{taskId}/pushNotificationConfigs/{id}')] },
  grpc: grpc('GetTaskPushNotificationConfig', 'GetTaskPushNotificationConfigRequest', 'TaskPushNotificationConfig'),
});

export const listTaskPushNotificationConfigs = unarySpec({
  name: 'ListTaskPushNotificationConfigs',
  scope: 'a2a:push',
  request: listPushConfigsRequestSchema,
  rest: [route('GET', '/tasks/{taskId}/pushNotificationConfigs')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/list', rest: [route('GET', '/v1/tasks/{taskId}/pushNotificationConfigs')] },
  grpc: grpc('ListTaskPushNotificationConfigs', 'ListTaskPushNotificationConfigsRequest', 'ListTaskPushNotificationConfigsResponse'),
});

export const deleteTaskPushNotificationConfig = unarySpec({
  name: 'DeleteTaskPushNotificationConfig',
  scope: 'a2a:push',
  request: getPushConfigRequestSchema,
  rest: [route('DELETE', '/tasks/{taskId}/pushNotificationConfigs/{id}')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'tasks/pushNotificationConfig/delete', rest: [route('DELETE', '/v1/tasks/{taskId}/pushNotificationConfigs/{id}')] },
  grpc: grpc('DeleteTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfigRequest', 'google.protobuf.Empty'),
});

export const getExtendedAgentCard = unarySpec({
  name: 'GetExtendedAgentCard',
  scope: 'a2a:read',
  request: extendedCardRequestSchema,
  rest: [route('GET', '/extendedAgentCard')],
  restBody: 'none',
  legacy: { jsonRpcMethod: 'agent/getAuthenticatedExtendedCard', rest: [route('GET', '/v1/card')] },
  grpc: grpc('GetExtendedAgentCard', 'GetExtendedAgentCardRequest', 'AgentCard'),
});

/** The A2A 1.0 operations, in the order of the spec (3.1.1 – 3.1.11). */
export const A2A_SPECS: readonly OperationSpec[] = [
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
];
