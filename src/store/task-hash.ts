// The task hash (RedisKeys.task(id).task), written down once: every field, what it holds and
// how its value reads. TypeScript names fields through this module only; the Lua scripts name
// them literally, and test/task-hash-fields.test.ts holds the two lists to each other.

/** How a field's value reads: a string as is, a number, epoch milliseconds, JSON, or '1' for yes. */
export type TaskFieldType = 'string' | 'number' | 'ms' | 'json' | 'flag';

interface TaskFieldSpec {
  type: TaskFieldType;
  holds: string;
}

export const TASK_HASH_FIELDS = {
  // identity, set by createTask
  id: { type: 'string', holds: 'the task id' },
  owner: { type: 'string', holds: 'the owner key (ownerKeyOf: agent/tenant/subject)' },
  tenant: { type: 'string', holds: "the owner's tenant ('' when tenants are not used)" },
  contextId: { type: 'string', holds: 'the context the task belongs to' },
  createdAtMs: { type: 'ms', holds: 'when the task was created' },
  versions: { type: 'json', holds: 'TaskVersions the task started under (gateway, adapter, card)' },
  callerScopes: { type: 'json', holds: "the scopes the latest input's credentials granted (string[])" },
  callerExtensions: { type: 'json', holds: "the extensions the latest input's request activated (string[])" },
  // what the owner reads (readTask)
  state: { type: 'string', holds: "the status's TaskState, kept apart so scripts need not parse status" },
  status: { type: 'json', holds: 'the TaskStatus' },
  artifacts: { type: 'json', holds: 'the Artifact[] of the task as last compacted, when it fits one segment (else absent: see artifactsGen); the chunks stored since are in the list TaskKeys.artifactChunks' },
  artifactsGen: { type: 'number', holds: "the generation of a snapshot too large for one segment, kept in the fields artseg:<generation>:<index> (src/store/artifact-segments.ts); absent: the snapshot is 'artifacts'" },
  artifactsSegments: { type: 'number', holds: 'how many segments the live generation (artifactsGen) has' },
  artifactsSegmentBytes: { type: 'number', holds: "bytes of the live generation's segments: what readTask weighs the snapshot by" },
  artifactsDraft: { type: 'string', holds: '"<generation> <segments> <bytes> <chunks> <chunk bytes>": a compaction writing its segments, not yet live (the pending chunks it folds in)' },
  artifactsGenSeq: { type: 'number', holds: 'the last generation number a compaction drew (each draft a new one)' },
  artifactChunkBytes: { type: 'number', holds: "bytes of the chunks in TaskKeys.artifactChunks (cleared with them): with the snapshot's length, what readTask weighs the artifacts by before assembling them" },
  metadata: { type: 'json', holds: 'the metadata the task was created with (JsonObject)' },
  updatedAtMs: { type: 'ms', holds: 'when the task last changed' },
  finishedAtMs: { type: 'ms', holds: 'when the task reached a terminal state' },
  outcome: { type: 'json', holds: 'whether and how a terminal result was verified (invariant 8)' },
  usageInputTokens: { type: 'number', holds: "model input tokens the task's turns recorded" },
  usageOutputTokens: { type: 'number', holds: "model output tokens the task's turns recorded" },
  directReply: { type: 'json', holds: 'the Message the agent answered with instead of a task (spec 3.1.1)' },
  eventsTrimmedThrough: { type: 'string', holds: 'id of the newest event the replay bound dropped' },
  eventsTrimmed: { type: 'number', holds: 'how many events the replay bound dropped in all' },
  eventsBytes: { type: 'number', holds: 'bytes of the events the replay buffer holds (appended less dropped), for replay.maxBytes' },
  generation: { type: 'number', holds: 'grows by one with every observable change of the task (each event appended, each message taken): docs/task-generations.md' },
  answerHistory: { type: 'number', holds: 'the history length a SendMessage waiting for the task (its creator, or a follow-up that resumed it) waits with (-1 = all); finishTurn publishes the task to it' },
  // cancellation (invariant 6)
  cancelRequestedAtMs: { type: 'ms', holds: 'stage 1: when a cancel was requested' },
  cancelRequestedBy: { type: 'string', holds: "the operator who canceled another owner's task" },
  cancelAcknowledgedAtMs: { type: 'ms', holds: 'stage 2: when the running turn saw the request' },
  cancelStoppedAtMs: { type: 'ms', holds: 'stage 3: when the task stopped' },
  cancelOutcome: { type: 'string', holds: 'the terminal state that won the race with the cancel' },
  // the current turn
  turn: { type: 'number', holds: 'the current turn (1 for the first)' },
  turnInputStart: { type: 'number', holds: "index in the history of the current turn's first input message" },
  turnAttempts: { type: 'number', holds: 'attempts of the current turn so far' },
  turnHandBacks: { type: 'number', holds: 'times a shutting-down worker handed the current turn back' },
  turnBudgetSpent: { type: 'number', holds: 'units the current turn spent (ctx.budget), across attempts' },
  turnWorker: { type: 'string', holds: 'the worker that last took the lease' },
  turnLeasedAtMs: { type: 'ms', holds: 'when the lease was last taken' },
  turnWithoutJob: { type: 'flag', holds: 'the lease was last taken by a turn no queue job carries (started where it was accepted): the reconciler is its recovery' },
  turnDeadlineFor: { type: 'number', holds: 'the turn turnDeadlineAtMs was fixed for' },
  turnDeadlineAtMs: { type: 'ms', holds: 'when the current turn must end (fixed at its first start)' },
  leaseGeneration: { type: 'number', holds: 'the lease generation every fenced write must carry' },
  inboxTrace: { type: 'json', holds: 'W3C trace context of the first message waiting for the running turn' },
  interruptTurn: { type: 'number', holds: 'the turn a new message asked to stop (input policy interrupt)' },
  interruptRequestedAtMs: { type: 'ms', holds: 'when that stop was asked' },
  // coordination (sub-agents)
  parentTaskId: { type: 'string', holds: "a sub-agent's task: its coordinator's task id" },
  role: { type: 'string', holds: "a sub-agent's task: its role" },
  readOnly: { type: 'flag', holds: 'a reviewer: it may not journal side effects or delegate' },
  suspended: { type: 'flag', holds: "the turn is parked for its assignments" },
  resumptions: { type: 'string', holds: '"<turn>.<count>": how often the turn was woken after parking' },
  awaitingChild: { type: 'string', holds: "the sub-agent whose question the task's input-required surfaced" },
  wakeSeq: { type: 'number', holds: 'counts wakes of a parked coordinator (each a new job id)' },
  // output bounds (src/limits/output-limits.ts, include/outputBound.lua) and lost workers
  outputTurn: { type: 'number', holds: 'the turn turnOutputBytes counts for' },
  turnOutputBytes: { type: 'number', holds: 'bytes of events the turn outputTurn stored (limits.maxTurnOutputBytes)' },
  taskOutputBytes: { type: 'number', holds: 'bytes of events all turns of the task stored (limits.maxTaskOutputBytes)' },
  lostWorkers: { type: 'json', holds: 'the latest workers lost while running a turn of the task: [{workerId, turn, attempt, atMs}]' },
} as const satisfies Record<string, TaskFieldSpec>;

export type TaskHashField = keyof typeof TASK_HASH_FIELDS;

/** Fields named per item: the prefix, then the item. */
export const TASK_HASH_FIELD_PREFIXES = {
  /** digest:<messageId>: the digest of a message's content as it was taken (a re-send with other content is a conflict). */
  digest: 'digest:',
  /** adapter:<key>: an adapter's value (ctx.adapterState), JSON. */
  adapterState: 'adapter:',
  /** interruptAcknowledged:<turn>: when the running turn saw it was interrupted (ms). */
  interruptAcknowledged: 'interruptAcknowledged:',
  /** artifactBytes:<artifactId>: bytes the artifact's chunks stored since its last replacing chunk (limits.maxArtifactBytes). */
  artifactBytes: 'artifactBytes:',
  /** artseg:<generation>:<index>: a segment of a snapshot too large for one call, a slice of its JSON (src/store/artifact-segments.ts). */
  artifactSegment: 'artseg:',
  /** __call:<script>, __reply:<script>, __calls:<script>: a script's remembered calls (src/store/scripts.ts, @once). */
  onceCall: '__call:',
  onceReply: '__reply:',
  onceCalls: '__calls:',
} as const;

/** Field names for commands: `taskField.owner` is 'owner', and a misspelt one does not compile. */
export const taskField = Object.fromEntries(Object.keys(TASK_HASH_FIELDS).map((name) => [name, name])) as { readonly [F in TaskHashField]: F };

/** A field named per item (see TASK_HASH_FIELD_PREFIXES). */
export const taskItemField = (prefix: keyof typeof TASK_HASH_FIELD_PREFIXES, item: string | number): string => `${TASK_HASH_FIELD_PREFIXES[prefix]}${item}`;

/** A task hash as HGETALL returns it, by field. */
export type TaskHash = { readonly [F in TaskHashField]?: string };

/** HGETALL's reply of a task hash, typed by its fields (per-item fields are left out). */
export function taskHashOf(all: Record<string, string>): TaskHash {
  const hash: { [F in TaskHashField]?: string } = {};
  for (const name of Object.keys(TASK_HASH_FIELDS) as TaskHashField[]) if (all[name] !== undefined) hash[name] = all[name];
  return hash;
}

/**
 * The fields readTask-4.lua reads, in its order (owner first); ListTasks reads the same fields
 * with plain commands and builds readTask's reply from them (task-listing.ts).
 */
export const READ_TASK_FIELDS = [
  'owner', 'id', 'contextId', 'status', 'artifacts', 'metadata',
  'cancelRequestedAtMs', 'cancelAcknowledgedAtMs', 'cancelStoppedAtMs', 'cancelOutcome', 'outcome',
  'usageInputTokens', 'usageOutputTokens', 'directReply', 'eventsTrimmedThrough', 'eventsTrimmed', 'generation',
] as const satisfies readonly TaskHashField[];
