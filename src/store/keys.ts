// Every Redis key and channel name, from one place. One task's keys share the hash tag
// `{<taskId>}` so they land in one Cluster slot and one Lua script may update them together.

export interface TaskKeys {
  /** HASH: snapshot (Task JSON without history), state, owner, tenant, contextId, turn, leaseGeneration, timestamps. */
  task: string;
  /** LIST of Message JSON, oldest first. */
  history: string;
  /** LIST of Message JSON accepted while a turn ran; the next turn's input. */
  inbox: string;
  /** STREAM: the replay buffer; field `r` holds a StreamResponse JSON. Its ids are the SSE ids. */
  events: string;
  /** SET of messageIds already accepted into this task (de-duplicates re-sent follow-ups). */
  messageIds: string;
  /** HASH turn number → turn record JSON (attempts, steps, outcome). */
  turns: string;
  /** STRING: worker id holding the lease, with a TTL renewed while the turn runs. */
  lease: string;
  /** HASH "<turn>:<step name>" → step journal record JSON (started / done / failed). */
  steps: string;
}

export class RedisKeys {
  constructor(readonly prefix: string) {}

  task(taskId: string): TaskKeys {
    const base = `${this.prefix}:{${taskId}}`;
    return {
      task: `${base}:task`,
      history: `${base}:history`,
      inbox: `${base}:inbox`,
      events: `${base}:events`,
      messageIds: `${base}:msgids`,
      turns: `${base}:turns`,
      lease: `${base}:lease`,
      steps: `${base}:steps`,
    };
  }

  /** ZSET of an owner's task ids scored by status timestamp (ms): ListTasks reads it newest first. */
  ownerTasks(ownerKey: string): string {
    return `${this.prefix}:owner:${ownerKey}:tasks`;
  }

  /** ZSET of an owner's task ids in one context, scored like ownerTasks. */
  ownerContextTasks(ownerKey: string, contextId: string): string {
    return `${this.prefix}:owner:${ownerKey}:ctx:${contextId}`;
  }

  /** ZSET of an owner's tasks with a turn queued or running: the active-task cap counts it. */
  ownerActiveTasks(ownerKey: string): string {
    return `${this.prefix}:owner:${ownerKey}:active`;
  }

  /** HASH: one principal's request token bucket (tokens, atMs), shared by every gateway. */
  rateBucket(ownerKey: string): string {
    return `${this.prefix}:rate:${ownerKey}`;
  }

  /** STRING: task id created by (owner, messageId): a re-sent message returns the same task. */
  idempotency(ownerKey: string, messageId: string): string {
    return `${this.prefix}:idem:${ownerKey}:${messageId}`;
  }

  /** Pub/sub channel carrying "<streamId>\n<StreamResponse JSON>" for one task. */
  eventChannel(taskId: string): string {
    return `${this.prefix}:ev:${taskId}`;
  }

  /** Pattern matching every task's event channel: one subscription per gateway process. */
  eventChannelPattern(): string {
    return `${this.prefix}:ev:*`;
  }

  /** Pub/sub channel on which cancel requests reach the worker running the turn. */
  cancelChannel(): string {
    return `${this.prefix}:cancel`;
  }

  /** BullMQ queue name for turns. */
  turnQueueName(): string {
    return `${this.prefix}-turns`;
  }
}
