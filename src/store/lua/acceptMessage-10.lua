--[[
  Accept a follow-up message for an existing task (spec 3.4).
  The task's own slot only: claimTurn (the owner's slot) ran first when the message needed the
  owner's active slot or quota, and the owner's indexes follow (src/store/owner-index.ts).
  KEYS[1] task hash   KEYS[2] history   KEYS[3] inbox   KEYS[4] messageIds
  KEYS[5] events      KEYS[6] turns     KEYS[7] assignments (a coordinator's)   KEYS[8] questions
  KEYS[9] lease       KEYS[10] pending artifact chunks (acquireLease-6.lua's: the lease ARGV[19] takes)
  ARGV[1] ownerKey   ARGV[2] contextId sent by the caller ('' if none)   ARGV[3] message JSON
  ARGV[4] messageId  ARGV[5] now (ms)  ARGV[6] now (ISO)  ARGV[7] event channel  ARGV[8] taskId
  ARGV[9] '1' when the owner's claim refused the message (cap or quota): after the checks that come
    first (owner, context, duplicate, terminal) the script returns {'REFUSED'} and changes nothing
  ARGV[10] the agent's input policy for a task whose turn is queued or running: enqueue | reject | interrupt
  ARGV[11] cancel channel (an interrupt reaches the worker running the turn there as "<taskId> <turn>")
  ARGV[12] the scopes the caller's credentials granted, JSON array: kept (for ctx.caller) when the message is taken
  ARGV[13] most messages that may wait for a running turn to end (0 = no bound)
  ARGV[14] digest of the message's content (parts, task, context, references): a messageId the task
    already took with other content is a conflict, never a silently dropped message
  ARGV[15] the extensions the request activated, JSON array: kept (for ctx.extensions) when the message is taken
  ARGV[16] the sending request's W3C trace context, JSON ('' = none): a message that waits for the
    running turn leaves it as 'inboxTrace' (the first waiting message's wins), the trace the
    next turn continues (finishTurn)
  ARGV[17] the generation the caller expects the task at ('' = any; docs/task-generations.md): checked
    after the duplicate check (a re-sent message stays idempotent), before anything else changes
  ARGV[18] the history length the sender waits to be answered with ('' = none; -1 = all): a blocking
    SendMessage that watches the task since before this call. On RESUMED it is kept as 'answerHistory',
    so the turn's final event carries the task to it as it does to a new task's (finishTurn)
  ARGV[19] the worker that takes the resumed turn's lease in this call ('' = none: the run takes it),
    a turn started in the process that accepted the message (src/runtime/local-turns.ts)
  ARGV[20] its lease TTL (ms)   ARGV[21] the turn's deadline (ms; 0 = none)   ARGV[22] maxTurnAttempts
  ARGV[23] the most artifact bytes the lease's reply carries (acquireLease-6.lua's ARGV[8])
  Returns {'NOT_FOUND'} | {'REFUSED'} (see ARGV[9]) | {'CONTEXT_MISMATCH'} | {'DUPLICATE', turn} | {'TERMINAL', state}
        | {'CONFLICT'} (the messageId was taken before with other content; nothing changed)
        | {'GENERATION_MISMATCH', current generation} (ARGV[17] is not the task's generation; nothing changed)
        | {'BUSY', state} (policy reject: a turn is queued or running; nothing changed)
        | {'INBOX_FULL', count} (that many messages already wait for the running turn; nothing changed)
        | {'JOINED', turn} (policy interrupt, the turn has not started: the message joins its input)
        | {'INTERRUPTING', turn} (policy interrupt: the running turn is asked to stop; the message
          is the next turn's input, which starts as soon as it stops)
        | {'FORWARDED', child task id} (a coordinator asked on behalf of an assignment: the caller
          forwards the message to that child; the coordinator's turn stays parked)
        | {'RESUMED', turn, event id, contextId, <acquireLease's reply, when ARGV[19] took it>...} (no
          turn ran: the message starts the next one; the caller starts or enqueues it. The id is the
          SUBMITTED status update's: every event of the new turn comes after it)
        | {'QUEUED', turn}  (a turn is running or queued: the message is the next turn's input)
  Emits on RESUMED: a TASK_STATE_SUBMITTED status update (and the lease's TASK_STATE_WORKING one). On INTERRUPTING (the first interrupt of a
  turn): a status update with metadata.cancellation {stage "requested", scope "turn", turn}.
  @bounds-events KEYS[5]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include terminal
  @include fieldWrites
  @include appendEvent
  @include storedArtifacts
  @include takeLease
  @include acceptMessage
]]
return __acceptMessage(KEYS, ARGV)
