--[[
  Take a task's lease to run its open turn. Bumps the fencing generation: from now on only
  writes carrying this generation are accepted, so a worker that lost the lease cannot write.
  KEYS[1] task hash   KEYS[2] lease   KEYS[3] history   KEYS[4] events   KEYS[5] turns
  KEYS[6] pending artifact chunks (see appendEvents)
  (The task's slot only: the owner's indexes follow, src/store/owner-index.ts.)
  ARGV[1] workerId   ARGV[2] lease TTL (ms)   ARGV[3] now (ms)   ARGV[4] now (ISO)   ARGV[5] event channel
  ARGV[6] turn deadline (ms from the turn's first start; 0 = none)
  ARGV[7] maxTurnAttempts (0 = no limit)
  ARGV[8] the most artifact bytes the reply carries (0 = no bound): larger artifacts are answered as
    '#slices <generation> <segments> <segment bytes> <chunks> <chunk bytes>' (generation 0: the 'artifacts'
    field), and the store reads them in slices of bounded size (src/store/artifact-segments.ts)
  ARGV[9] '1' when no queue job carries the run (a turn started where it was accepted), '' otherwise:
    kept as turnWithoutJob, so the reconciler queues the turn soon once the lease has lapsed
  A run that takes over from a worker whose lease lapsed (attempt 2 or later, no holder) records
  that worker in the task's lostWorkers (the latest LOST_WORKERS_KEPT). Past maxTurnAttempts the
  lease is taken but nothing big is read (the artifacts and history a lost run may have grown are
  what killed its workers): {'EXHAUSTED', generation, turn, attempts, contextId, lostWorkers JSON,
  turnRecord|'', role|'', parentTaskId|''}, and the caller fails the turn.
  Returns {'GONE'} | {'CLOSED', state} | {'HELD', holder} | {'EXHAUSTED', …}
        | {'ACQUIRED', generation, turn, attempts, cancelRequestedAtMs|'', status, artifacts (include/storedArtifacts.lua, or '#slices …'), metadata,
           contextId, turnInputStart, turnRecord|'', versions|'', deadlineAtMs|'', budgetSpent, handBacks,
           role|'', parentTaskId|'', readOnly|'', resumption, interrupted ('1': a new message asked this turn to stop),
           callerScopes (JSON array), callerExtensions (JSON array), history...}
        resumption: how often this turn has been woken after parking for its assignments (0 = never
        parked). A run after a lost worker keeps the resumption of the run it replaces, so events
        of a turn are keyed by (turn, resumption, sequence) and a re-run's repeats are recognized.
  Emits: a TASK_STATE_WORKING status update when the turn starts from SUBMITTED.
  @bounds-events KEYS[4]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include fieldWrites
  @include appendEvent
  @include storedArtifacts
  @include takeLease
]]
return __takeLease(
  { task = KEYS[1], lease = KEYS[2], history = KEYS[3], events = KEYS[4], turns = KEYS[5], chunks = KEYS[6] },
  { workerId = ARGV[1], ttlMs = ARGV[2], nowMs = ARGV[3], nowIso = ARGV[4], channel = ARGV[5], deadlineMs = ARGV[6],
    maxAttempts = ARGV[7], inlineBytes = ARGV[8], withoutJob = ARGV[9] })
