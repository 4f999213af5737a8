// The handlers of the A2A 1.0 operations (spec 3.1), declared in src/protocol/operations/a2a.ts
// and answered by the gateway's handler (src/tasks/a2a-handler.ts): the declaration says how a
// face reaches an operation, the handler what it does. The dispatcher (./dispatch.ts) has already
// parsed the request and admitted the caller (scope, tenant, agent access, rate limit) before a
// handler runs; the admitted call is the handler's Caller.
import * as specs from '../protocol/operations/a2a.ts';
import { defineStream, defineUnary } from './definition.ts';

export const sendMessage = defineUnary(specs.sendMessage, (request, call) => call.service.sendMessage(call, request));

export const sendStreamingMessage = defineStream(specs.sendStreamingMessage, (request, call) => call.service.sendStreamingMessage(call, request));

export const getTask = defineUnary(specs.getTask, (request, call) => call.service.getTask(call, request));

export const listTasks = defineUnary(specs.listTasks, (request, call) => call.service.listTasks(call, request));

export const cancelTask = defineUnary(specs.cancelTask, (request, call) => call.service.cancelTask(call, request));

export const subscribeToTask = defineStream(specs.subscribeToTask, (request, call) => call.service.subscribeToTask(call, request));

export const createTaskPushNotificationConfig = defineUnary(specs.createTaskPushNotificationConfig, (request, call) => call.service.createTaskPushNotificationConfig(call, request));

export const getTaskPushNotificationConfig = defineUnary(specs.getTaskPushNotificationConfig, (request, call) => call.service.getTaskPushNotificationConfig(call, request));

export const listTaskPushNotificationConfigs = defineUnary(specs.listTaskPushNotificationConfigs, (request, call) => call.service.listTaskPushNotificationConfigs(call, request));

export const deleteTaskPushNotificationConfig = defineUnary(specs.deleteTaskPushNotificationConfig, (request, call) => call.service.deleteTaskPushNotificationConfig(call, request));

export const getExtendedAgentCard = defineUnary(specs.getExtendedAgentCard, (_request, call) => call.service.getExtendedAgentCard(call));

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
