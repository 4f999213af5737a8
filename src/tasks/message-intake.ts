// Storing a sent message, the step SendMessage and SendStreamingMessage share: the bound on the
// agent's queue, one owner's large messages one at a time, a new task or the next input of an
// existing one, then (redisWaitReplicas) the replicas' confirmation of the writes.
import { newId } from '../ids.ts';
import { A2AError } from '../protocol/errors.ts';
import type { SendMessageRequest } from '../protocol/types.ts';
import { ReplicaAckError } from '../redis/replica-ack.ts';
import type { TaskWriteAck } from '../store/task-write-ack.ts';
import { ownerKeyOf, type Owner } from '../store/task-store.ts';
import { submitFollowUp } from './follow-up.ts';
import type { IntakeDeps, SenderContext, Submission } from './intake-steps.ts';
import { artifactAssembly } from './artifact-assembly.ts';
import { LargeMessageGate } from './large-messages.ts';
import { messageDigestOf } from './message-digest.ts';
import { storeNewTask } from './new-task.ts';

export interface MessageIntakeDeps extends IntakeDeps {
  /** Replicas confirm a submitted message's writes before it is answered; undefined = no WAIT. */
  replicaAck: TaskWriteAck | undefined;
}

/** How a message is submitted (MessageIntake.submit). */
export interface SubmitOptions {
  /** A new task's id (a fresh one when left out). */
  taskId?: string;
  /**
   * The caller waits for the turn to end, reading this much history: a new task's (createTask's
   * answerHistoryLength), or a follow-up's when the caller has watched the task since before its
   * accept (acceptMessage's; submitFollowUp).
   */
  answerHistoryLength?: number;
  /** The caller follows the turn (a blocking or streaming send): its turn may wait briefly for a place on this process's worker. */
  waitsForTurn?: boolean;
}

export class MessageIntake {
  /** One owner's large messages are stored one at a time here (see large-messages.ts). */
  private readonly largeMessages = new LargeMessageGate();

  constructor(private readonly deps: MessageIntakeDeps) {}

  /**
   * Stores the message (a new task, or the next input of an existing one), enqueues its turn and,
   * with redisWaitReplicas, has replicas confirm the task's and the owner's writes before the
   * message counts as accepted. A re-sent message is confirmed again: its first send may have
   * failed exactly there. `how` says how the caller follows the turn (SubmitOptions).
   */
  async submit(owner: Owner, request: SendMessageRequest, sender: SenderContext, how: SubmitOptions = {}): Promise<Submission> {
    const turn = await this.largeMessages.enter(ownerKeyOf(owner), request.message);
    try {
      const submission = await this.store(owner, request, sender, how, turn.large);
      await this.confirmReplicated(owner, submission.taskId);
      return submission;
    } finally {
      turn.leave();
    }
  }

  private async store(owner: Owner, request: SendMessageRequest, sender: SenderContext, how: SubmitOptions, large: boolean): Promise<Submission> {
    const { message } = request;
    await this.deps.turns.checkDepth(owner.agent);
    // A large message's digest is computed on the assembly thread; here if the thread failed (the next job starts another).
    const digest = large ? await artifactAssembly.digest(message).catch(() => messageDigestOf(message)) : messageDigestOf(message);
    if (message.taskId !== undefined) {
      return submitFollowUp(this.deps, owner, request, message.taskId, sender, digest, { waitsForTurn: how.waitsForTurn === true, answerHistoryLength: how.answerHistoryLength });
    }
    return storeNewTask(this.deps, { owner, request, sender, taskId: how.taskId ?? newId(), digest, answerHistoryLength: how.answerHistoryLength, waitsForTurn: how.waitsForTurn === true, large });
  }

  private async confirmReplicated(owner: Owner, taskId: string): Promise<void> {
    const ack = this.deps.replicaAck;
    if (ack === undefined || !ack.enabled) return;
    try {
      await ack.messageAccepted(taskId, ownerKeyOf(owner));
    } catch (error) {
      if (!(error instanceof ReplicaAckError)) throw error;
      throw new A2AError(
        'UNAVAILABLE',
        `Task ${taskId} took the message, but ${error.message} Send the same message (same messageId) again after the Retry-After delay: it is not stored twice and starts no second turn.`,
        { retryAfterSeconds: 1, metadata: { taskId, reason: 'REPLICAS_UNCONFIRMED', acknowledged: String(error.acknowledged), required: String(error.required) }, cause: error },
      );
    }
  }
}
