--[[
  Step 2 of creating a task, in the task's own slot ({<taskId>}, docs/redis-slots.md): the task,
  its first message and turn, and its creation event. claimTask (step 1, the owner's slot) has
  claimed the message's idempotency key, the active slot and the quota, and indexed the task.
  Idempotent on the task id: a task that exists (the step re-run for a re-sent message, or a
  sub-agent's derived id) is never overwritten.
  KEYS[1] task hash   KEYS[2] history list   KEYS[3] events stream   KEYS[4] messageIds set   KEYS[5] turns hash
  KEYS[6] lease   KEYS[7] pending artifact chunks (the lease's keys, see acquireLease-6.lua)
  ARGV[1] taskId   ARGV[2] ownerKey   ARGV[3] tenant   ARGV[4] contextId
  ARGV[5] status JSON   ARGV[6] message JSON   ARGV[7] messageId   ARGV[8] now (ms)
  ARGV[9] task event JSON (StreamResponse {task}); '' when ARGV[18] refers to the history   ARGV[10] turn record JSON
  ARGV[11] event channel   ARGV[12] metadata JSON
  ARGV[13] versions JSON (gateway, adapter, card the task started under)
  ARGV[14] a sub-agent's links JSON {parentTaskId, role, readOnly} ('' = a top-level task)
  ARGV[15] the scopes the caller's credentials granted, JSON array (what ctx.caller shows the adapter)
  ARGV[16] digest of the message's content as sent (a re-send with the same messageId is compared with it)
  ARGV[17] the extensions the request activated, JSON array (what ctx.extensions shows the adapter)
  ARGV[18] the task event as the replay buffer keeps it (src/store/creation-event.ts: without the
           first message, which the history holds; '' = ARGV[9] as it is); ARGV[9] is what is published
  ARGV[19] the history length the SendMessage that creates the task waits with, '-1' = all ('' = none
           waits): finishTurn publishes the task with the final event of the turn that ends the wait
  ARGV[20] when ARGV[18] refers to the history: the byte of it after which the message goes back in
  ARGV[21] the worker that takes the lease of the first turn at once ('' = none: a job or a worker takes
    it later), in the process that accepted the task (src/runtime/local-turns.ts): what acquireLease
    would do next, without a call of its own   ARGV[22] its lease TTL (ms)   ARGV[23] now (ISO)
    ARGV[24] the turn's deadline (ms, 0 = none)   ARGV[25] maxTurnAttempts (0 = no limit)
    ARGV[26] the most artifact bytes the lease's reply carries (acquireLease's ARGV[8])
  Returns {'EXISTS'} (nothing changed) | {'CREATED', eventId} | {'CREATED', eventId, <acquireLease's reply>...}
  Emits: XADD + PUBLISH of the task snapshot event; with the lease, the TASK_STATE_WORKING status
  update acquireLease emits.
  @bounds-events KEYS[3]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include fieldWrites
  @include appendEvent
  @include storedArtifacts
  @include takeLease
  @include createTask
]]
return __createTask(KEYS, ARGV)
