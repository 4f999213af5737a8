// Every Redis key and channel name, from one place. One task's keys share the hash tag
// `{<taskId>}` so they land in one Cluster slot and one Lua script may update them together.

export interface TaskKeys {
  /**
   * HASH: snapshot (Task JSON without history), state, owner, tenant, contextId, turn, leaseGeneration, timestamps;
   * `digest:<messageId>` per message taken (a re-send with other content is a conflict), `callerScopes` and
   * `callerExtensions` of the latest input, `directReply` (the Message the agent answered with, spec 3.1.1).
   */
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
  /** HASH: digests of the events the current turn run emitted, so a re-run's repeats append nothing (appendEvents). */
  emitted: string;
  /**
   * LIST of the artifact chunks stored since the task hash's `artifacts` snapshot was last written
   * ({"append", "artifact"} JSON, oldest first; appendEvents): readers merge the two (src/store/stored-artifacts.ts).
   */
  artifactChunks: string;
  /** STRING: worker id holding the lease, with a TTL renewed while the turn runs. */
  lease: string;
  /** HASH "<turn>:<step name>" → step journal record JSON (started / done / failed). */
  steps: string;
  /** Coordinator only. HASH child task id → assignment record JSON (role, index, state, grant order). */
  assignments: string;
  /** Coordinator only. LIST of child task ids waiting for a slot, oldest first. */
  pendingAssignments: string;
  /** Coordinator only. HASH "total" and "role:<role>" → assignments holding a slot; "seq" → grants so far. */
  slots: string;
  /** Coordinator only. HASH delegation name → its settings JSON; "<name>#settled" → how many assignments settled. */
  delegations: string;
  /** Coordinator only. LIST of child task ids whose questions wait to be surfaced on the coordinator. */
  questions: string;
  /** HASH of push delivery cursors (see src/store/push/push-keys.ts): the replay bound keeps what they still need. */
  pushCursors: string;
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
      emitted: `${base}:emitted`,
      artifactChunks: `${base}:artchunks`,
      lease: `${base}:lease`,
      steps: `${base}:steps`,
      assignments: `${base}:assign`,
      pendingAssignments: `${base}:pending`,
      slots: `${base}:slots`,
      delegations: `${base}:delegations`,
      questions: `${base}:questions`,
      pushCursors: `${base}:pushcur`,
    };
  }

  /**
   * Where every key of one owner lives: the owner's slot `{o:<ownerKey>}` (docs/redis-slots.md),
   * so one script may change an owner's indexes, active set, idempotency keys and quota together.
   * Owner keys are URI-encoded, so they hold no ":" and no "}" that could end the tag early.
   */
  private owner(ownerKey: string): string {
    return `${this.prefix}:{o:${ownerKey}}`;
  }

  /** ZSET of an owner's task ids scored by status timestamp (ms): ListTasks reads it newest first. A hint: readers re-check each task. */
  ownerTasks(ownerKey: string): string {
    return `${this.owner(ownerKey)}:tasks`;
  }

  /** ZSET of an owner's task ids in one context, scored like ownerTasks. */
  ownerContextTasks(ownerKey: string, contextId: string): string {
    return `${this.owner(ownerKey)}:ctx:${contextId}`;
  }

  /** ZSET of an owner's tasks with a turn queued or running, scored by when they became so: the active-task cap counts it. */
  ownerActiveTasks(ownerKey: string): string {
    return `${this.owner(ownerKey)}:active`;
  }

  /** SCAN pattern of every owner's active set; may also match a context index whose id ends in ":active" (see ownerOfActiveSet). */
  ownerActivePattern(): string {
    return `${this.prefix}:{o:*}:active`;
  }

  /**
   * The owner key of an active-set key found by ownerActivePattern, or undefined for any other
   * key the pattern matched: owner keys are URI-encoded, so they never contain ":" or "}".
   */
  ownerOfActiveSet(key: string): string | undefined {
    const head = `${this.prefix}:{o:`;
    const tail = '}:active';
    if (!key.startsWith(head) || !key.endsWith(tail)) return undefined;
    const ownerKey = key.slice(head.length, -tail.length);
    return ownerKey === '' || ownerKey.includes(':') || ownerKey.includes('}') ? undefined : ownerKey;
  }

  /**
   * HASH in the owner's slot: what the owner's stored messages take (`bytes`), its stored tasks
   * (`tasks`), and `t:<taskId>` → the bytes each task charged (limits.maxStoredBytes, maxStoredTasks).
   */
  ownerQuota(ownerKey: string): string {
    return `${this.owner(ownerKey)}:quota`;
  }

  /** ZSET in the owner's slot: the owner's open streams (stream id → ms its slot expires unless its gateway renews it). */
  ownerStreams(ownerKey: string): string {
    return `${this.prefix}:{o:${ownerKey}}:streams`;
  }

  /** ZSET in a slot of its own: every open stream of every gateway (stream id → ms its slot expires unless renewed). */
  openStreams(): string {
    return `${this.prefix}:{streams}:open`;
  }

  /** ZSET in the owner's slot: each charged task → when to look whether it expired (its charge is then released). */
  ownerQuotaChecks(ownerKey: string): string {
    return `${this.owner(ownerKey)}:quotacheck`;
  }

  /**
   * ZSET task id → ms it last changed, across every owner (operators' listing, src/store/recent-tasks.ts).
   * A slot of its own (`{ops}`); written after the task's own write, never from a task's script.
   */
  recentTasks(): string {
    return `${this.prefix}:{ops}:recent`;
  }

  /** STRING: token of the one worker process sweeping for open tasks whose turn job is gone. */
  reconcilerLock(): string {
    return `${this.prefix}:reconciler:lock`;
  }

  /** HASH in the owner's slot: one principal's request token bucket (tokens, atMs), shared by every gateway. */
  rateBucket(ownerKey: string): string {
    return `${this.owner(ownerKey)}:rate`;
  }

  /** HASH in the owner's slot: one owner's byte bucket (`ingress`: request bodies, `stored`: messages stored, `output`: its turns' output), shared by every gateway and worker. */
  byteBucket(ownerKey: string, kind: 'ingress' | 'stored' | 'output'): string {
    return `${this.owner(ownerKey)}:bytes:${kind}`;
  }

  /**
   * STRING in the owner's slot: a sub-agent's task was claimed (its id is derived from coordinator
   * and position, so no caller's messageId reaches it); the idempotency key of its creation.
   */
  childCreated(ownerKey: string, childTaskId: string): string {
    return `${this.owner(ownerKey)}:child:${childTaskId}`;
  }

  /** HASH: one client address's bucket of failed authentications (tokens, atMs), shared by every gateway. */
  unauthenticatedBucket(address: string): string {
    return `${this.prefix}:rate:address:${address}`;
  }

  /** STRING in the owner's slot: task id created by (owner, messageId): a re-sent message returns the same task. */
  idempotency(ownerKey: string, messageId: string): string {
    return `${this.owner(ownerKey)}:idem:${messageId}`;
  }

  /**
   * Pub/sub channel carrying "<streamId>\n<StreamResponse JSON>" for one task (the id alone for an
   * event past 64 KiB, include/appendEvent.lua), in the task's slot:
   * on a Cluster the task's scripts SPUBLISH on it, which only a channel of their slot allows.
   */
  eventChannel(taskId: string): string {
    return `${this.prefix}:ev:{${taskId}}`;
  }

  /** The task id of an event channel, or undefined for any other channel. */
  taskOfEventChannel(channel: string): string | undefined {
    const head = `${this.prefix}:ev:{`;
    return channel.startsWith(head) && channel.endsWith('}') ? channel.slice(head.length, -1) : undefined;
  }

  /** Pattern matching every task's event channel: one subscription per gateway process (single Redis). */
  eventChannelPattern(): string {
    return `${this.prefix}:ev:*`;
  }

  /**
   * Pub/sub channel on which cancel requests ("<taskId>") and interrupts ("<taskId> <turn>")
   * reach the worker running the task's turn, on a single Redis: every worker subscribes it.
   */
  cancelChannel(): string {
    return `${this.prefix}:cancel`;
  }

  /**
   * The same on a Cluster, one per task in its slot (its scripts SPUBLISH there): a worker
   * subscribes the channel of each turn it runs while it runs it.
   */
  taskCancelChannel(taskId: string): string {
    return `${this.prefix}:cancel:{${taskId}}`;
  }
}
