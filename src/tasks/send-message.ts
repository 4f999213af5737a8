// SendMessage and SendStreamingMessage (spec 3.1.1, 3.1.2): the message is stored (./message-
// intake.ts); a blocking SendMessage then waits for the turn to end, a stream answers where it
// starts and what ends it.
import { newId } from '../ids.ts';
import type { StreamPlan } from '../operations/stream-plan.ts';
import { A2AError, taskNotFound } from '../protocol/errors.ts';
import { isInterrupted, isTerminal, type SendMessageRequest, type SendMessageResponse, type TaskState } from '../protocol/types.ts';
import type { TaskRead, TaskStore } from '../store/task-store.ts';
import { markStage } from '../telemetry/stage-marks.ts';
import type { Caller } from './a2a-handler.ts';
import { directReplyOfEvent } from './direct-reply.ts';
import type { SenderContext, Submission } from './intake-steps.ts';
import { approximateBytes, LARGE_MESSAGE_BYTES } from './large-messages.ts';
import type { MessageIntake } from './message-intake.ts';
import { snapshotAfterSkip } from './subscribe.ts';
import { readTaskAnswer } from './task-answer.ts';
import type { TaskEvents } from './task-events.ts';

export interface SendMessageDeps {
  intake: MessageIntake;
  events: TaskEvents;
  store: TaskStore;
  /** How long a blocking SendMessage waits for the turn to end before answering the task as it is. */
  blockingTimeoutMs: number;
}

const senderOf = (caller: Caller): SenderContext => ({
  grants: caller.grants,
  extensions: caller.extensions,
  trace: caller.trace,
  expectedGeneration: caller.generations?.expected,
  ...(caller.reserveTask === undefined ? {} : { reserveTask: caller.reserveTask }),
  answersSpliced: caller.answersSpliced === true,
});

/**
 * The id of the task a message without taskId creates, chosen before the create so the call can
 * watch the task from its start: it publishes nothing before it exists, so a blocking wait or a
 * stream watching first needs no read of the replay buffer (one round trip less on the busiest
 * paths). `watchable` is false for a large first message: its creation event is announced by id
 * alone (creation-event.ts), and a watch already open would read that megabyte back only to
 * skip it (a stream that reads it anyway reads the buffer as before).
 */
function newTaskOf(request: SendMessageRequest): { newTaskId: string | undefined; watchable: boolean } {
  if (request.message.taskId !== undefined) return { newTaskId: undefined, watchable: false };
  return { newTaskId: newId(), watchable: approximateBytes(request.message) < LARGE_MESSAGE_BYTES };
}

/** A turn is over for a blocking SendMessage at a terminal state or when the agent needs something (input, auth). */
const turnOver = (state: TaskState): boolean => isTerminal(state) || isInterrupted(state);

/** What SendMessage refuses before storing anything: media types the agent does not take. */
async function checkSendRequest(caller: Caller, request: SendMessageRequest): Promise<void> {
  const { inputModes } = await caller.endpoint.cards.cards();
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

export class SendMessages {
  constructor(private readonly deps: SendMessageDeps) {}

  async sendMessage(caller: Caller, request: SendMessageRequest): Promise<SendMessageResponse> {
    await checkSendRequest(caller, request);
    const { owner } = caller;
    const { events, blockingTimeoutMs } = this.deps;
    const blocking = request.configuration?.returnImmediately !== true;
    const { newTaskId, watchable } = newTaskOf(request);
    if (blocking && newTaskId !== undefined) markStage(newTaskId, 'received');
    // A large first message's wait starts after its creation event instead, reading what followed it.
    const early = blocking && watchable && newTaskId !== undefined ? events.watchTurnEnd(newTaskId, '', blockingTimeoutMs, turnOver, true) : undefined;
    // A follow-up's wait watches the task from before its accept where one subscription hears
    // every task: a message that resumes the task then needs no snapshot nor buffer read.
    const followUpTaskId = request.message.taskId;
    const watched = blocking && followUpTaskId !== undefined && events.watchesEveryTask ? events.watchFollowUpTurnEnd(followUpTaskId, blockingTimeoutMs, turnOver) : undefined;
    const historyLength = request.configuration?.historyLength;
    let submission: Submission;
    try {
      submission = await this.deps.intake.submit(owner, request, senderOf(caller), {
        ...(newTaskId === undefined ? {} : { taskId: newTaskId }),
        ...(early === undefined && watched === undefined ? {} : { answerHistoryLength: historyLength ?? -1 }),
        waitsForTurn: blocking,
      });
    } catch (error) {
      early?.cancel();
      watched?.cancel();
      throw error;
    }
    // The task as the final event brought it (the store published it for this wait), else read below.
    let answer: TaskRead | undefined;
    if (early !== undefined && submission.taskId === newTaskId) {
      answer = await early.done;
      markStage(submission.taskId, 'notified');
    } else if (watched !== undefined && submission.watched === true) {
      watched.from(submission.afterId);
      answer = await watched.done;
    } else if (blocking) {
      early?.cancel(); // a re-sent message: the task is an earlier one
      watched?.cancel(); // not a resume (a re-send, a message queued for the running turn): the snapshot says where
      // A follow-up whose snapshot is already terminal or interrupted had its turn end before the
      // snapshot was read (a re-sent message, or a queued turn that ran at once): no event after
      // afterId will end it, so waiting would block until the timeout.
      const snapshotState = submission.snapshot?.task.status.state;
      if (snapshotState === undefined || !turnOver(snapshotState)) {
        // A task this call created (a large first message): what came after its creation event.
        await events.waitForTurnEnd(submission.taskId, submission.created?.lastEventId ?? submission.afterId, blockingTimeoutMs, turnOver);
      }
    }
    // A task this call created, answered at once: as created (returnImmediately), not read back.
    if (!blocking) answer = submission.created;
    // A large task's artifacts are assembled off the event loop (./task-answer.ts).
    const read = answer ?? (await readTaskAnswer(this.deps.store, owner, submission.taskId, historyLength, caller.answersSpliced === true));
    if (read === undefined) throw taskNotFound(submission.taskId);
    markStage(submission.taskId, 'responded');
    // The agent answered with a Message (spec 3.1.1): that is the answer, to this call and to every re-send.
    if (read.directReply !== undefined) return { message: read.directReply };
    return { task: read.task };
  }

  async sendStreamingMessage(caller: Caller, request: SendMessageRequest): Promise<StreamPlan> {
    await checkSendRequest(caller, request);
    const { owner } = caller;
    const { newTaskId, watchable } = newTaskOf(request);
    const held = watchable && newTaskId !== undefined ? this.deps.events.holdNewTask(newTaskId) : undefined;
    let submission: Submission;
    try {
      submission = await this.deps.intake.submit(owner, request, senderOf(caller), { ...(newTaskId === undefined ? {} : { taskId: newTaskId }), waitsForTurn: true });
    } catch (error) {
      held?.close();
      throw error;
    }
    const { taskId, snapshot, afterId } = submission;
    // A re-sent message answers with the task it made before: that one's stream reads the buffer.
    const ownHeld = held !== undefined && taskId === held.taskId && snapshot === undefined && afterId === '' ? held : undefined;
    if (ownHeld === undefined) held?.close();
    return {
      taskId,
      snapshot,
      afterId,
      ...(ownHeld === undefined ? {} : { held: ownHeld }),
      // The turn is over at a terminal state or when the agent waits for input (DESIGN.md);
      // AUTH_REQUIRED keeps the stream open: the turn resumes after out-of-band credentials.
      closesOn: (state) => isTerminal(state) || state === 'TASK_STATE_INPUT_REQUIRED',
      alreadyEnded: false,
      snapshotAfterSkip: (lastEventId) => snapshotAfterSkip(this.deps.store, owner, taskId, lastEventId, caller.answersSpliced === true),
      // Only a new task (or a re-send of the message that made one) of an agent that may answer
      // with a Message can turn out to be one; a follow-up's client holds the task already.
      ...(snapshot === undefined && caller.endpoint.agent.adapter.directMessages === true ? { holdForDirectReply: { directReplyOf: directReplyOfEvent } } : {}),
    };
  }
}
