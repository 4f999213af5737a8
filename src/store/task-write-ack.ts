// The replicas' confirmation of a task's writes (redisWaitReplicas), asked by what was written
// rather than by key: which masters took the writes follows from the keys' slots, which only the
// store knows (keys.ts). The waiting itself is src/redis/replica-ack.ts's.
import type { ReplicaAck } from '../redis/replica-ack.ts';
import { RedisKeys } from './keys.ts';

export class TaskWriteAck {
  private readonly keys: RedisKeys;

  constructor(
    readonly ack: ReplicaAck,
    prefix: string,
  ) {
    this.keys = new RedisKeys(prefix);
  }

  /** False when no replica confirmation is asked for (redisWaitReplicas 0): the confirmations resolve at once. */
  get enabled(): boolean {
    return this.ack.enabled;
  }

  /** A turn's finish: its writes are in the task's slot. Rejects with ReplicaAckError when too few replicas confirm. */
  turnFinished(taskId: string): Promise<void> {
    return this.ack.confirm([this.keys.task(taskId).task]);
  }

  /** An accepted message: its writes are in the task's slot and the owner's (its active set). Rejects with ReplicaAckError when too few replicas confirm. */
  messageAccepted(taskId: string, ownerKey: string): Promise<void> {
    return this.ack.confirm([this.keys.task(taskId).task, this.keys.ownerActiveTasks(ownerKey)]);
  }
}
