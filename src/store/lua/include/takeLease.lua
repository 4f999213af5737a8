--[[
  A task's lease taken to run its open turn, for acquireLease (a worker's take) and createTask (a
  new task whose first turn starts in the process that accepted it, src/runtime/local-turns.ts).
  Needs `@include fieldWrites`, `@include appendEvent` and `@include storedArtifacts` before it.
  k: {task, lease, history, events, turns, chunks} (keys, see acquireLease-6.lua)
  a: {workerId, ttlMs, nowMs, nowIso, channel, deadlineMs, maxAttempts, inlineBytes, withoutJob}
  Returns acquireLease's reply (its header says what each value is).
]]
local function __takeLease(k, a)
  local taskKey = k.task
  -- What the script reads before it writes, in one call: each of these fields is read before any
  -- write of this script touches it (turnWorker, turnDeadlineFor, resumptions and suspended are
  -- written below, after they were read here).
  local before = redis.call('HMGET', taskKey, 'state', 'turnWorker', 'turn', 'turnDeadlineFor', 'resumptions', 'suspended',
    'cancelRequestedAtMs', 'turnHandBacks', 'id', 'contextId')
  local state = before[1]
  -- Every stored task has a state: none means no task, unless the hash is there without one.
  if not state and redis.call('EXISTS', taskKey) == 0 then return {'GONE'} end
  if state ~= 'TASK_STATE_SUBMITTED' and state ~= 'TASK_STATE_WORKING' then return {'CLOSED', state} end
  local holder = redis.call('GET', k.lease)
  if holder and holder ~= a.workerId then return {'HELD', holder} end
  local generation = redis.call('HINCRBY', taskKey, 'leaseGeneration', '1')
  redis.call('SET', k.lease, a.workerId, 'PX', a.ttlMs)
  local attempts = redis.call('HINCRBY', taskKey, 'turnAttempts', '1')
  local previousWorker = before[2]
  -- The hash's fields go in one HSET and one HDEL (include/fieldWrites.lua), before anything reads them back.
  local taskWrites = __fieldWrites()
  taskWrites.set('turnWorker', a.workerId)
  taskWrites.set('turnLeasedAtMs', a.nowMs)
  taskWrites.set('turnWithoutJob', a.withoutJob)
  local turn = before[3]
  if attempts > 1 and not holder and previousWorker then
    local LOST_WORKERS_KEPT = 10
    local raw = redis.call('HGET', taskKey, 'lostWorkers')
    local lost = raw and cjson.decode(raw) or {}
    table.insert(lost, { workerId = previousWorker, turn = tonumber(turn), attempt = attempts - 1, atMs = tonumber(a.nowMs) })
    while #lost > LOST_WORKERS_KEPT do table.remove(lost, 1) end
    taskWrites.set('lostWorkers', cjson.encode(lost))
  end
  if tonumber(a.maxAttempts) > 0 and attempts > tonumber(a.maxAttempts) then
    taskWrites.flush(taskKey)
    local exhausted = redis.call('HMGET', taskKey, 'lostWorkers', 'role', 'parentTaskId')
    return {'EXHAUSTED', generation, turn, attempts, before[10], exhausted[1] or '[]',
      redis.call('HGET', k.turns, turn) or '', exhausted[2] or '', exhausted[3] or ''}
  end
  -- The deadline is fixed when the turn first starts and survives every change of worker. Keyed
  -- by turn, not by attempt 1: a run that is not counted as an attempt (a hand-back at shutdown)
  -- gives its attempt back, so attempt 1 can start more than once.
  if before[4] ~= turn then
    taskWrites.set('turnDeadlineFor', turn)
    if tonumber(a.deadlineMs) > 0 then
      taskWrites.set('turnDeadlineAtMs', tonumber(a.nowMs) + tonumber(a.deadlineMs))
    else
      taskWrites.clear('turnDeadlineAtMs')
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
    taskWrites.set('resumptions', turn .. '.' .. resumption)
    taskWrites.clear('suspended')
  end
  local cancelRequested = before[7] or ''
  local handBacks = before[8] or '0'
  local taskId = before[9]
  local contextId = before[10]
  local working = state == 'TASK_STATE_SUBMITTED' and cancelRequested == ''
  local status
  if working then
    status = '{"state":"TASK_STATE_WORKING","timestamp":' .. cjson.encode(a.nowIso) .. '}'
    taskWrites.set('status', status)
    taskWrites.set('state', 'TASK_STATE_WORKING')
    taskWrites.set('updatedAtMs', a.nowMs)
  end
  taskWrites.flush(taskKey)
  if working then
    local event = '{"statusUpdate":{"taskId":' .. cjson.encode(taskId) .. ',"contextId":' .. cjson.encode(contextId)
      .. ',"status":' .. status .. '}}'
    __appendEvent(taskKey, k.events, a.channel, event)
  end
  -- Read after the writes above (status, turnDeadlineAtMs may have changed), with the counts
  -- that weigh the artifacts (__artifactsWeight's).
  local fields = redis.call('HMGET', taskKey, 'status', 'metadata', 'turnInputStart', 'versions', 'turnDeadlineAtMs',
    'turnBudgetSpent', 'role', 'parentTaskId', 'readOnly', 'interruptTurn', 'callerScopes', 'callerExtensions',
    'artifactsSegmentBytes', 'artifactChunkBytes')
  local artifacts
  local inlineBytes = tonumber(a.inlineBytes) or 0
  if inlineBytes > 0 and __artifactsWeightWith(taskKey, fields[13], fields[14]) > inlineBytes then
    -- Too large for one reply: the run reads them in slices (src/store/artifact-segments.ts); it
    -- holds the lease now, so nothing changes them under it.
    local live = redis.call('HMGET', taskKey, 'artifactsGen', 'artifactsSegments', 'artifactsSegmentBytes', 'artifactChunkBytes')
    artifacts = '#slices ' .. (live[1] or '0') .. ' ' .. (live[2] or '0') .. ' ' .. (live[3] or '0') .. ' ' .. redis.call('LLEN', k.chunks)
      .. ' ' .. (live[4] or '0')
  else
    artifacts = __storedArtifacts(redis.call('HGET', taskKey, 'artifacts'), k.chunks, taskKey) or ''
  end
  local result = {'ACQUIRED', generation, turn, attempts, cancelRequested, fields[1], artifacts, fields[2],
    contextId, fields[3], redis.call('HGET', k.turns, turn) or '', fields[4] or '', fields[5] or '', fields[6] or '0', handBacks,
    fields[7] or '', fields[8] or '', fields[9] or '', resumption,
    fields[10] == turn and '1' or '', fields[11] or '[]', fields[12] or '[]'}
  for _, message in ipairs(redis.call('LRANGE', k.history, '0', '-1')) do table.insert(result, message) end
  return result
end
