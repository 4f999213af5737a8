// A message with taskId: the task's next input. It resumes the task (a new turn is queued),
// waits for the running turn, is refused, or, on a coordinator asking for one of its
// assignments, is forwarded to that child.
import { traceCarrier } from '../telemetry/spans.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import { STORED_COPIES, type StorageQuota } from '../limits/storage-quota.ts';
import { A2AError, invalidParams, taskNotFound } from '../protocol/errors.ts';
import { generationConflict } from '../extensions/task-generations.ts';
import type { Message, SendMessageRequest } from '../protocol/types.ts';
import { ownerKeyOf, type AcceptResult, type Owner, type TaskStore } from '../store/task-store.ts';
import type { StoredPushConfig } from '../push/push-config.ts';
import type { LocalTurnSlot } from '../../queues/turns.ts';
import { messageDigestOf } from './message-digest.ts';
import { readTaskAnswer } from './task-answer.ts';
import { LOCAL_PLACE_WAIT_MS } from './turn-queue.ts';
import {
  agentOf,
  chargeStoredBytes,
  messageIdReused,
  preparePushConfig,
  tooManyActive,
  type IntakeDeps,
  type SenderContext,
  type Submission,
} from './intake-steps.ts';

/**
 * `waitsForTurn`: the caller follows the turn (a blocking or streaming send), so its turn may wait
 * briefly for a place here. `answerHistoryLength`: the caller has watched the task since before
 * this call (a blocking SendMessage, TaskEvents.watchFollowUpTurnEnd) and waits for the turn the
 * message starts with this much history: a message that resumes the task is then answered without
 * the task's snapshot (`watched`), its turn's final event carrying the task to the caller.
 */
export async function submitFollowUp(
  deps: IntakeDeps,
  owner: Owner,
  request: SendMessageRequest,
  taskId: string,
  sender: SenderContext,
  digest: string,
  how: { waitsForTurn: boolean; answerHistoryLength: number | undefined },
): Promise<Submission> {
  const pushConfig = await preparePushConfig(deps.push, request, taskId);
  // A place here for the turn the message may resume, decided before the accept so the accept can
  // take the turn's lease, as a new task's create does (not with a push config, attached between the two).
  const slot = pushConfig === undefined ? await deps.turns.localSlot(owner, taskId, how.waitsForTurn ? LOCAL_PLACE_WAIT_MS : 0) : undefined;
  try {
    return await acceptFollowUp(deps, { owner, request, taskId, sender, digest, how, pushConfig, slot });
  } finally {
    // No turn started on it (a message that did not resume the task, a refusal, an error).
    slot?.release();
  }
}

async function acceptFollowUp(
  deps: IntakeDeps,
  input: {
    owner: Owner;
    request: SendMessageRequest;
    taskId: string;
    sender: SenderContext;
    digest: string;
    how: { waitsForTurn: boolean; answerHistoryLength: number | undefined };
    pushConfig: StoredPushConfig | undefined;
    slot: LocalTurnSlot | undefined;
  },
): Promise<Submission> {
  const { owner, request, taskId, sender, digest, how, pushConfig, slot } = input;
  const { message } = request;
  const { store, quota } = deps;
  const { settings } = agentOf(deps.agents, owner);
  const { maxActiveTasks } = settings.limits;
  const pushCursor = pushConfig === undefined ? undefined : await deps.push?.cursorBefore(taskId);
  const stored: Message = { ...message, taskId };
  const storedBytes = (await chargeStoredBytes(deps.byteRates, owner, stored, STORED_COPIES.followUp))?.bytes;
  const accept = (): ReturnType<TaskStore['gateway']['acceptMessage']> =>
    store.gateway.acceptMessage({
      taskId,
      owner,
      contextId: message.contextId,
      message: stored,
      maxActiveTasks,
      inputPolicy: settings.inputPolicy,
      callerScopes: sender.grants,
      callerExtensions: sender.extensions,
      messageDigest: digest,
      maxQueuedMessages: settings.limits.maxQueuedMessages,
      trace: traceCarrier(sender.trace),
      expectedGeneration: sender.expectedGeneration,
      quota: quota?.chargeFor(stored, STORED_COPIES.followUp, Date.now(), storedBytes),
      answerHistoryLength: how.answerHistoryLength,
      ...(slot?.leaseTerms === undefined ? {} : { takeLease: slot.leaseTerms }),
      now: new Date(),
    });
  let result = await accept();
  if (result.kind === 'over-quota' && quota !== undefined && (await quota.sweep(ownerKeyOf(owner))).tasks > 0) result = await accept();
  switch (result.kind) {
    case 'not-found':
      throw taskNotFound(taskId);
    case 'over-quota':
      throw (quota as StorageQuota).refusal(result);
    case 'conflict':
      throw messageIdReused(message.messageId, taskId);
    case 'generation-mismatch':
      throw generationConflict(taskId, sender.expectedGeneration ?? 0, result.generation, 'SendMessage');
    case 'inbox-full':
      throw new LimitExceededError(
        'limits.maxQueuedMessages',
        'RESOURCE_EXHAUSTED',
        `${result.waiting} messages already wait for the running turn of task ${taskId}, the limit is ${settings.limits.maxQueuedMessages} (limits.maxQueuedMessages); nothing was stored. Send it again once the turn has answered.`,
        { retryAfterSeconds: 1, metadata: { taskId, reason: 'INBOX_FULL', limit: String(settings.limits.maxQueuedMessages) } },
      );
    case 'busy':
      throw new A2AError(
        'UNSUPPORTED_OPERATION',
        `Task ${taskId} is ${result.state}: a turn is queued or running, and agent "${owner.agent}" refuses messages until it ends (inputPolicy reject); nothing was stored. Send the message again once the task is waiting for input or has answered.`,
        { metadata: { taskId, state: result.state, reason: 'TASK_BUSY', inputPolicy: 'reject' } },
      );
    case 'too-many-active':
      throw tooManyActive(result.active, maxActiveTasks);
    case 'context-mismatch':
      throw invalidParams([{ field: 'message.contextId', description: `does not match the contextId of task ${taskId}; omit it or send the task's own` }]);
    case 'terminal':
      throw new A2AError(
        'UNSUPPORTED_OPERATION',
        `Task ${taskId} is ${result.state}, a terminal state: it accepts no further messages. Send the message without taskId to start a new task.`,
        { metadata: { taskId, state: result.state } },
      );
    case 'forwarded':
      await forwardToAssignment(deps, owner, taskId, result.childId, message, sender);
      break;
    default:
      break;
  }
  // Every event from this message's acceptance on (its announcement and the turn it starts included).
  if (pushConfig !== undefined) await deps.push?.attach(owner, pushConfig, pushCursor ?? 'now');
  // The caller has watched the task since before the accept: the turn's events after the
  // accept's own reach it live, so it needs no snapshot (one read fewer), only the turn started.
  if (result.kind === 'resumed' && how.answerHistoryLength !== undefined) {
    await startResumedTurn(deps, input, result);
    return { taskId, contextId: result.contextId, afterId: result.eventId, snapshot: undefined, watched: true };
  }
  // The stream's opening snapshot: a large task's artifacts are assembled off the event loop.
  const read = await readTaskAnswer(store, owner, taskId, undefined, sender.answersSpliced === true);
  if (read === undefined) throw taskNotFound(taskId);
  // The turn this message opened starts here when this process runs the agent's turns and has a
  // place, as a new task's first turn does. A re-sent message's turn still waiting goes to the
  // queue: its first send may be starting it here right now, and the job's id makes it one.
  if (result.kind === 'resumed') {
    await startResumedTurn(deps, input, result);
  } else if (result.kind === 'duplicate' && read.task.status.state === 'TASK_STATE_SUBMITTED') {
    await deps.turns.enqueue(owner, taskId, read.task.contextId, result.turn, sender.trace, 1);
  }
  return {
    taskId,
    contextId: read.task.contextId,
    afterId: read.lastEventId,
    snapshot: { task: read.task, eventId: read.lastEventId },
  };
}

/**
 * The turn a message resumed: on the place taken before the accept, under the lease the accept
 * took if it took one. Without a place then (none free, or a push config came with the message),
 * one is looked for now, as for any stored message's turn, or the turn is queued.
 */
async function startResumedTurn(
  deps: IntakeDeps,
  input: { owner: Owner; taskId: string; sender: SenderContext; how: { waitsForTurn: boolean }; slot: LocalTurnSlot | undefined },
  resumed: Extract<AcceptResult, { kind: 'resumed' }>,
): Promise<void> {
  const { owner, taskId, sender, slot } = input;
  const { turn, contextId, active, lease } = resumed;
  if (slot !== undefined) {
    slot.start({ data: { taskId, turn, ownerKey: ownerKeyOf(owner), contextId }, trace: sender.trace, ownerActiveTasks: active, ...(lease === undefined ? {} : { lease }) });
    return;
  }
  await deps.turns.startOrEnqueue(owner, taskId, contextId, turn, sender.trace, active, input.how.waitsForTurn ? LOCAL_PLACE_WAIT_MS : 0);
}

/**
 * The coordinator was asking on behalf of one of its assignments: the answer goes to that
 * child as its next turn, and the coordinator asks its next waiting question, if any.
 */
async function forwardToAssignment(deps: IntakeDeps, owner: Owner, coordinatorId: string, childId: string, message: Message, sender: SenderContext): Promise<void> {
  const forwarded: Message = { ...message, taskId: childId, referenceTaskIds: [coordinatorId] };
  delete forwarded.contextId;
  // An answer the coordinator asked for on the child's behalf always queues: the child is waiting for it.
  const accepted = await deps.store.gateway.acceptMessage({
    taskId: childId,
    owner,
    contextId: undefined,
    message: forwarded,
    maxActiveTasks: 0,
    inputPolicy: 'enqueue',
    callerScopes: sender.grants,
    callerExtensions: sender.extensions,
    messageDigest: messageDigestOf(forwarded),
    now: new Date(),
  });
  if (accepted.kind === 'resumed') {
    const child = await deps.store.gateway.readTask(childId, owner, 0);
    if (child !== undefined) await deps.turns.enqueue(owner, childId, child.task.contextId, accepted.turn, sender.trace);
  }
  await deps.delegator.surfaceQuestion(coordinatorId);
}
