// The handlers of the A2A 1.0 operations (spec 3.1), declared in src/protocol/operations/a2a.ts.
// They call the task service; the dispatcher (./dispatch.ts) has already parsed the request and
// admitted the caller (scope, tenant, agent access, rate limit) before a handler runs.
import { A2AError } from '../protocol/errors.ts';
import * as specs from '../protocol/operations/a2a.ts';
import { isTerminal, type SendMessageRequest } from '../protocol/types.ts';
import { directReplyOfEvent } from '../tasks/direct-reply.ts';
import type { TaskService } from '../tasks/service.ts';
import type { PushConfigs } from '../push/push-configs.ts';
import { defineStream, defineUnary, type OperationCall } from './definition.ts';

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

export const sendMessage = defineUnary(specs.sendMessage, async (request, call) => {
  await checkSendRequest(request, call);
  return call.service.sendMessage(call.owner, request, { grants: call.grants, extensions: call.extensions, trace: call.trace });
});

export const sendStreamingMessage = defineStream(specs.sendStreamingMessage, async (request, call) => {
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
});

// A task's bytes count against the caller's rate like a ListTasks page (limits.requestBytesPerToken).
export const getTask = defineUnary(specs.getTask, (request, call) => call.service.getTask(call.owner, request, call.chargeAnswerBytes));

// A page's bytes count against the caller's rate like a request body's (limits.requestBytesPerToken).
export const listTasks = defineUnary(specs.listTasks, (request, call) => call.service.listTasks(call.owner, request, call.chargeAnswerBytes));

export const cancelTask = defineUnary(specs.cancelTask, (request, call) => call.service.cancelTask(call.owner, request));

export const subscribeToTask = defineStream(specs.subscribeToTask, async (request, call) => {
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
});

export const createTaskPushNotificationConfig = defineUnary(specs.createTaskPushNotificationConfig, (request, call) => pushConfigs(call.service).create(call.owner, request));

export const getTaskPushNotificationConfig = defineUnary(specs.getTaskPushNotificationConfig, (request, call) => pushConfigs(call.service).get(call.owner, request));

export const listTaskPushNotificationConfigs = defineUnary(specs.listTaskPushNotificationConfigs, (request, call) => pushConfigs(call.service).list(call.owner, request));

export const deleteTaskPushNotificationConfig = defineUnary(specs.deleteTaskPushNotificationConfig, (request, call) => pushConfigs(call.service).delete(call.owner, request));

export const getExtendedAgentCard = defineUnary(specs.getExtendedAgentCard, async (_request, call) => {
  const { extended } = await call.endpoint.cards.cards();
  if (extended !== undefined && call.principal !== undefined) return extended.card;
  throw new A2AError(
    'UNSUPPORTED_OPERATION',
    'This agent has no extended agent card (capabilities.extendedAgentCard is false); the public card at /.well-known/agent-card.json is complete.',
  );
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
