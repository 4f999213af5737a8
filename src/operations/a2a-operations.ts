// The handlers of the A2A 1.0 operations (spec 3.1), declared in src/protocol/operations/a2a.ts
// and answered by the gateway's handler (src/tasks/a2a-handler.ts): the declaration says how a
// face reaches an operation, the handler what it does. The dispatcher (./dispatch.ts) has already
// parsed the request and admitted the caller (scope, tenant, agent access, rate limit) before a
// handler runs; the admitted call is the handler's Caller.
import * as specs from '../protocol/operations/a2a.ts';
import { generationParamsOf, withGeneration } from '../extensions/task-generations.ts';
import type { JsonObject, Task } from '../protocol/types.ts';
import { readMarkOf } from '../store/task-read.ts';
import { defineStream, defineUnary, type OperationCall } from './definition.ts';

/**
 * The call with what it asks of task generations (src/extensions/task-generations.ts), and how
 * the tasks it is answered with look: with their generation when it activated that extension.
 */
function withGenerations(call: OperationCall, requestMetadata: JsonObject | undefined): { call: OperationCall & { generations?: ReturnType<typeof generationParamsOf> }; shown: ((task: Task) => Task) | undefined } {
  const generations = generationParamsOf(call.extensions, call.header, requestMetadata);
  // Not asked for: the call and its answer pass through as they are.
  if (generations === undefined) return { call, shown: undefined };
  return { call: { ...call, generations }, shown: (task) => withGeneration(task, readMarkOf(task)?.generation) };
}

export const sendMessage = defineUnary(specs.sendMessage, async (request, call) => {
  const { call: caller, shown } = withGenerations(call, request.metadata);
  const answer = await call.service.sendMessage(caller, request);
  return shown !== undefined && 'task' in answer && answer.task !== undefined ? { ...answer, task: shown(answer.task) } : answer;
});

// A stale expected generation is refused before the stream starts (an ordinary error answer);
// streamed events are the replay buffer's and carry no generation (docs/task-generations.md).
export const sendStreamingMessage = defineStream(specs.sendStreamingMessage, (request, call) =>
  call.service.sendStreamingMessage(withGenerations(call, request.metadata).call, request),
);

export const getTask = defineUnary(specs.getTask, async (request, call) => {
  const { call: caller, shown } = withGenerations(call, undefined);
  const task = await call.service.getTask(caller, request);
  return shown === undefined ? task : shown(task);
});

export const listTasks = defineUnary(specs.listTasks, async (request, call) => {
  const { call: caller, shown } = withGenerations(call, undefined);
  const page = await call.service.listTasks(caller, request);
  return shown === undefined ? page : { ...page, tasks: page.tasks.map(shown) };
});

export const cancelTask = defineUnary(specs.cancelTask, async (request, call) => {
  const { call: caller, shown } = withGenerations(call, request.metadata);
  const task = await call.service.cancelTask(caller, request);
  return shown === undefined ? task : shown(task);
});

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
