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
  @include appendEvent
  @include storedArtifacts
]]
-- What the script reads before it writes, in one call: each of these fields is read before any
-- write of this script touches it (turnWorker, turnDeadlineFor, resumptions and suspended are
-- written below, after they were read here).
local before = redis.call('HMGET', KEYS[1], 'state', 'turnWorker', 'turn', 'turnDeadlineFor', 'resumptions', 'suspended',
  'cancelRequestedAtMs', 'turnHandBacks', 'id', 'contextId')
local state = before[1]
-- Every stored task has a state: none means no task, unless the hash is there without one.
if not state and redis.call('EXISTS', KEYS[1]) == 0 then return {'GONE'} end
if state ~= 'TASK_STATE_SUBMITTED' and state ~= 'TASK_STATE_WORKING' then return {'CLOSED', state} end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return {'HELD', holder} end
local generation = redis.call('HINCRBY', KEYS[1], 'leaseGeneration', 1)
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
local attempts = redis.call('HINCRBY', KEYS[1], 'turnAttempts', 1)
local previousWorker = before[2]
redis.call('HSET', KEYS[1], 'turnWorker', ARGV[1], 'turnLeasedAtMs', ARGV[3], 'turnWithoutJob', ARGV[9])
local turn = before[3]
if attempts > 1 and not holder and previousWorker then
  local LOST_WORKERS_KEPT = 10
  local raw = redis.call('HGET', KEYS[1], 'lostWorkers')
  local lost = raw and cjson.decode(raw) or {}
  table.insert(lost, { workerId = previousWorker, turn = tonumber(turn), attempt = attempts - 1, atMs = tonumber(ARGV[3]) })
  while #lost > LOST_WORKERS_KEPT do table.remove(lost, 1) end
  redis.call('HSET', KEYS[1], 'lostWorkers', cjson.encode(lost))
end
if tonumber(ARGV[7]) > 0 and attempts > tonumber(ARGV[7]) then
  local exhausted = redis.call('HMGET', KEYS[1], 'lostWorkers', 'role', 'parentTaskId')
  return {'EXHAUSTED', generation, turn, attempts, before[10], exhausted[1] or '[]',
    redis.call('HGET', KEYS[5], turn) or '', exhausted[2] or '', exhausted[3] or ''}
end
-- The deadline is fixed when the turn first starts and survives every change of worker. Keyed
-- by turn, not by attempt 1: a run that is not counted as an attempt (a hand-back at shutdown)
-- gives its attempt back, so attempt 1 can start more than once.
if before[4] ~= turn then
  redis.call('HSET', KEYS[1], 'turnDeadlineFor', turn)
  if tonumber(ARGV[6]) > 0 then
    redis.call('HSET', KEYS[1], 'turnDeadlineAtMs', tonumber(ARGV[3]) + tonumber(ARGV[6]))
  else
    redis.call('HDEL', KEYS[1], 'turnDeadlineAtMs')
  end
end
local resumption = 0
local counted = before[5]
if counted then
  local countedTurn, count = string.match(counted, '^(%d+)%.(%d+)$')
  if countedTurn == turn then resumption = tonumber(count) end
end
if before[6] == '1' then
  resumption = resumption + 1
  redis.call('HSET', KEYS[1], 'resumptions', turn .. '.' .. resumption)
  redis.call('HDEL', KEYS[1], 'suspended')
end
local cancelRequested = before[7] or ''
local handBacks = before[8] or '0'
local taskId = before[9]
local contextId = before[10]
if state == 'TASK_STATE_SUBMITTED' and cancelRequested == '' then
  local status = '{"state":"TASK_STATE_WORKING","timestamp":' .. cjson.encode(ARGV[4]) .. '}'
  redis.call('HSET', KEYS[1], 'status', status, 'state', 'TASK_STATE_WORKING', 'updatedAtMs', ARGV[3])
  local event = '{"statusUpdate":{"taskId":' .. cjson.encode(taskId) .. ',"contextId":' .. cjson.encode(contextId)
    .. ',"status":' .. status .. '}}'
  local id = __appendEvent(KEYS[1], KEYS[4], ARGV[5], event)
end
-- Read after the writes above (status, turnDeadlineAtMs may have changed).
local fields = redis.call('HMGET', KEYS[1], 'status', 'metadata', 'turnInputStart', 'versions', 'turnDeadlineAtMs',
  'turnBudgetSpent', 'role', 'parentTaskId', 'readOnly', 'interruptTurn', 'callerScopes', 'callerExtensions')
local artifacts
local inlineBytes = tonumber(ARGV[8]) or 0
if inlineBytes > 0 and __artifactsWeight(KEYS[1]) > inlineBytes then
  -- Too large for one reply: the run reads them in slices (src/store/artifact-segments.ts); it
  -- holds the lease now, so nothing changes them under it.
  local live = redis.call('HMGET', KEYS[1], 'artifactsGen', 'artifactsSegments', 'artifactsSegmentBytes', 'artifactChunkBytes')
  artifacts = '#slices ' .. (live[1] or '0') .. ' ' .. (live[2] or '0') .. ' ' .. (live[3] or '0') .. ' ' .. redis.call('LLEN', KEYS[6])
    .. ' ' .. (live[4] or '0')
else
  artifacts = __storedArtifacts(redis.call('HGET', KEYS[1], 'artifacts'), KEYS[6]) or ''
end
local result = {'ACQUIRED', generation, turn, attempts, cancelRequested, fields[1], artifacts, fields[2],
  contextId, fields[3], redis.call('HGET', KEYS[5], turn) or '', fields[4] or '', fields[5] or '', fields[6] or '0', handBacks,
  fields[7] or '', fields[8] or '', fields[9] or '', resumption,
  fields[10] == turn and '1' or '', fields[11] or '[]', fields[12] or '[]'}
for _, message in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do table.insert(result, message) end
return result
