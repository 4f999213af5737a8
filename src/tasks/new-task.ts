// A message without taskId: a new task is stored and its first turn queued (or started at once on
// this process's own worker, local-turns.ts), or, for a message sent before, the task it made is
// answered again without a second turn.
import { newId } from '../ids.ts';
import { STORED_COPIES, type StorageQuota } from '../limits/storage-quota.ts';
import { taskNotFound } from '../protocol/errors.ts';
import type { Message, SendMessageRequest } from '../protocol/types.ts';
import type { OwedTake } from '../store/limits/token-buckets.ts';
import { createdTaskRead } from '../store/task-read.ts';
import { ownerKeyOf, type Owner, type TaskStore } from '../store/task-store.ts';
import { tasksCreated } from '../telemetry/metrics.ts';
import { markStage } from '../telemetry/stage-marks.ts';
import { yieldToOthers } from './large-messages.ts';
import type { LocalTurnSlot } from '../../queues/turns.ts';
import { LOCAL_PLACE_WAIT_MS } from './turn-queue.ts';
import {
  agentOf,
  messageIdReused,
  owedStoredBytes,
  preparePushConfig,
  tooManyActive,
  type IntakeDeps,
  type SenderContext,
  type Submission,
} from './intake-steps.ts';

export interface NewTaskInput {
  owner: Owner;
  request: SendMessageRequest;
  sender: SenderContext;
  taskId: string;
  digest: string;
  /** The caller waits for the turn to end, reading this much history (createTask's answerHistoryLength). */
  answerHistoryLength: number | undefined;
  /** The caller follows the turn (a blocking or streaming send): when every place here is in use, it waits briefly for one (LOCAL_PLACE_WAIT_MS). */
  waitsForTurn: boolean;
  /** A large message: the event loop is yielded between the costly steps. */
  large: boolean;
}

export async function storeNewTask(deps: IntakeDeps, input: NewTaskInput): Promise<Submission> {
  // Decided before the task is stored: a turn that starts here needs no job added with the create.
  const slot = await deps.turns.localSlot(input.owner, input.taskId, input.waitsForTurn ? LOCAL_PLACE_WAIT_MS : 0);
  try {
    return await storeWithFirstTurn(deps, input, slot);
  } finally {
    // A task not created (a re-sent message, a limit, an error) started no turn on it.
    slot?.release();
  }
}

async function storeWithFirstTurn(deps: IntakeDeps, input: NewTaskInput, slot: LocalTurnSlot | undefined): Promise<Submission> {
  const { owner, request, sender, taskId, digest, answerHistoryLength, large } = input;
  const { message } = request;
  const agent = agentOf(deps.agents, owner);
  const contextId = message.contextId ?? newId();
  const pushConfig = await preparePushConfig(deps.push, request, taskId);
  // An owner this gateway has not read lately: their subscriptions are read beside the task's creation, not after it.
  deps.subscriptions?.prefetch(owner);
  const stored: Message = { ...message, taskId, contextId };
  // Its bytes are taken from the owner's stored-bytes rate by the claim, in the same call.
  const charged = owedStoredBytes(deps.byteRates, owner, stored, STORED_COPIES.newTask);
  const storedBytes = charged?.bytes;
  const storedTake = charged?.take;
  if (large) await yieldToOthers();
  const { quota, store } = deps;
  const create = (): ReturnType<TaskStore['gateway']['createTask']> =>
    store.gateway.createTask({
      taskId,
      owner,
      contextId,
      message: stored,
      metadata: request.metadata ?? {},
      idempotencyTtlSeconds: deps.idempotencyTtlSeconds,
      versions: agent.versionsFor(),
      maxActiveTasks: agent.settings.limits.maxActiveTasks,
      callerScopes: sender.grants,
      callerExtensions: sender.extensions,
      messageDigest: digest,
      answerHistoryLength,
      quota: quota?.chargeFor(stored, STORED_COPIES.newTask, Date.now(), storedBytes),
      ...(storedTake === undefined ? {} : { storedBytes: storedTake }),
      ...(charged === undefined ? {} : { messageJson: charged.json }),
      // A push config is attached between storing and queueing (it must see every event).
      ...(pushConfig === undefined && slot === undefined ? { queueFirstTurn: deps.turns.firstTurnOf(owner, taskId, contextId, sender.trace) } : {}),
      // The turn starts here: the create takes its lease too (not with a push config, attached between the two).
      ...(pushConfig === undefined && slot?.leaseTerms !== undefined ? { takeLease: slot.leaseTerms } : {}),
      now: new Date(),
    });
  // The consumer's plan first: a task it has no place for is refused before anything is stored.
  const reservation = await sender.reserveTask?.(taskId);
  let created: Awaited<ReturnType<typeof create>>;
  try {
    created = await create();
  } catch (error) {
    await reservation?.undo();
    throw error;
  }
  // Past the quota: release what expired tasks still hold (a bounded sweep), then try once more.
  if (created.kind === 'over-quota' && quota !== undefined && (await quota.sweep(ownerKeyOf(owner))).tasks > 0) created = await create().catch(async (error: unknown) => {
    await reservation?.undo();
    throw error;
  });
  // Not created (a re-sent message's earlier task, another limit): its place goes back.
  if (created.kind !== 'created') await reservation?.undo();
  if (created.kind === 'over-quota') throw (quota as StorageQuota).refusal(created);
  if (created.kind === 'byte-rate') throw (storedTake as OwedTake).refusal(created.waitMs);
  if (created.kind === 'created' && created.quotaChecksDue > 0) quota?.sweepSoon(ownerKeyOf(owner));
  if (created.kind === 'too-many-active') throw tooManyActive(created.active, agent.settings.limits.maxActiveTasks);
  if (created.kind === 'duplicate') {
    const taken = await store.gateway.messageDigest(created.taskId, message.messageId);
    // A task from before digests were kept has none: taken as the same message.
    if (taken !== undefined && taken !== digest) throw messageIdReused(message.messageId, created.taskId);
    // The same message again: same task, no second turn. Re-enqueueing the first turn is a
    // no-op unless the first attempt stored the task but died before its job was added.
    const read = await store.gateway.readTask(created.taskId, owner, 0);
    if (read === undefined) throw taskNotFound(created.taskId);
    if (pushConfig !== undefined) await deps.push?.attach(owner, { ...pushConfig, taskId: created.taskId }, 'begin');
    // A retry after a failure between storing and subscribing: putting them on again is harmless.
    await deps.subscriptions?.applyToNewTask(owner, created.taskId, read.task.contextId);
    if (read.task.status.state === 'TASK_STATE_SUBMITTED') {
      await deps.turns.enqueue(owner, created.taskId, read.task.contextId, 1, sender.trace);
    }
    return { taskId: created.taskId, contextId: read.task.contextId, afterId: '', snapshot: undefined };
  }
  tasksCreated.inc({ agent: agent.name });
  markStage(taskId, 'accepted');
  // Stored before the task id is returned and before its turn can run: the config gets every event.
  if (pushConfig !== undefined) await deps.push?.attach(owner, pushConfig, 'begin');
  if (slot !== undefined) slot.start({ data: { taskId, turn: 1, ownerKey: ownerKeyOf(owner), contextId }, trace: sender.trace, ownerActiveTasks: created.active, ...(created.lease === undefined ? {} : { lease: created.lease }) });
  else if (!created.enqueued) await deps.turns.enqueue(owner, taskId, contextId, 1, sender.trace, created.active);
  // Their configs start at the task's first event, so they get every event even when put on
  // after its turn was queued; an owner without subscriptions costs no round trip here.
  await deps.subscriptions?.applyToNewTask(owner, taskId, contextId);
  markStage(taskId, 'enqueued');
  const answer = createdTaskRead(created.task, created.eventId, request.configuration?.historyLength, storedBytes ?? 0);
  return { taskId, contextId, afterId: '', snapshot: undefined, created: answer };
}
