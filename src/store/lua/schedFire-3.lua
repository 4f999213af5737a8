--[[
  Decide a schedule's firings when one is due, atomically and idempotently. Candidates are the
  schedule's times up to now (the due one, and any the schedule missed while nothing ran); those
  at or before the last handled time were decided already and are ignored, so a job run twice
  (a restart, a lost worker) fires nothing twice. A candidate more than `late after` ms old was
  missed: the lateness policy decides (skip: none fires; run-once: the latest fires; catch-up:
  the latest `catchUpMax` fire); every candidate not fired is recorded as skipped, never dropped
  silently. A candidate planned sooner than the minimum interval after the schedule's previous
  firing (whatever its expression now says, or however its times were computed) is skipped too,
  with that reason. A one-time schedule is completed once decided.
  One slot: the schedule's.
  KEYS[1] schedule hash   KEYS[2] firings (hash firingId → JSON)   KEYS[3] firings index (zset firingId → scheduled-for ms)
  ARGV[1] now (ms)   ARGV[2] late after (ms)   ARGV[3] candidate times JSON (ascending)   ARGV[4] task ids JSON (one per candidate)
  ARGV[5] older candidates left out of ARGV[3] (all missed)   ARGV[6] most firing records kept
  ARGV[7] how long a completed one-time schedule stays readable (ms)   ARGV[8] minimum interval between firings (ms)
  Returns {'INACTIVE', state} | {'OK', completed ('1' when this decision completed a one-time schedule),
  skipped as too soon (count, this decision), firingId1, scheduledFor1, taskId1, ...}: every firing
  decided to fire and not yet started (including ones an earlier run decided and did not get to start).
]]
local key, firingsKey, firingIndexKey = KEYS[1], KEYS[2], KEYS[3]
local fields = redis.call('HMGET', key, 'id', 'state', 'lastScheduledForMs', 'definition', 'lastFiredForMs')
if not fields[1] then return {'INACTIVE', 'deleted'} end
local now, lateAfter = tonumber(ARGV[1]), tonumber(ARGV[2])
local last = tonumber(fields[3] or '0')
local lastFired = tonumber(fields[5] or '')
local minInterval = tonumber(ARGV[8])
local tooSoon = 0
local definition = cjson.decode(fields[4])
local scheduleId = fields[1]
local candidates = cjson.decode(ARGV[3])
local taskIds = cjson.decode(ARGV[4])
local function record(firing)
  redis.call('HSET', firingsKey, firing.firingId, cjson.encode(firing))
  redis.call('ZADD', firingIndexKey, firing.scheduledFor, firing.firingId)
end
if fields[2] == 'active' then
  local policy = (definition.lateness and definition.lateness.policy) or 'run-once'
  local cap = (definition.lateness and definition.lateness.catchUpMax) or 1
  local onTime, missed = {}, {}
  for i, t in ipairs(candidates) do
    if t > last then
      if now - t > lateAfter then table.insert(missed, i) else table.insert(onTime, i) end
    end
  end
  local fire = {}
  local keep = 0
  if policy == 'run-once' then keep = 1 elseif policy == 'catch-up' then keep = cap end
  for n, i in ipairs(missed) do fire[i] = (#missed - n) < keep end
  for _, i in ipairs(onTime) do fire[i] = true end
  local skipped = tonumber(ARGV[5])
  for i, t in ipairs(candidates) do
    if t > last then
      local firing = {firingId = scheduleId .. '@' .. t, scheduledFor = t, decidedAtMs = now}
      if fire[i] and lastFired and t - lastFired < minInterval then
        fire[i] = false
        tooSoon = tooSoon + 1
        firing.state = 'skipped'
        firing.reason = 'planned ' .. (t - lastFired) / 1000 .. ' s after the previous firing; the shortest interval allowed is ' .. minInterval / 1000 .. ' s (schedules.minIntervalSeconds)'
        skipped = skipped + 1
      elseif fire[i] then
        lastFired = t
        firing.state = 'starting'
        firing.taskId = taskIds[i]
        if now - t > lateAfter then firing.late = true end
        redis.call('HINCRBY', key, 'firedCount', 1)
      else
        firing.state = 'skipped'
        firing.reason = 'missed while nothing ran; lateness policy ' .. policy
        skipped = skipped + 1
      end
      record(firing)
      if t > last then last = t end
    end
  end
  if skipped > 0 then redis.call('HINCRBY', key, 'skippedCount', skipped) end
  redis.call('HSET', key, 'lastScheduledForMs', last, 'updatedAtMs', now)
  if lastFired then redis.call('HSET', key, 'lastFiredForMs', lastFired) end
  if definition.at and #candidates > 0 then
    -- Done: it stays readable for the retention period, like a finished task, then goes.
    redis.call('HSET', key, 'state', 'completed')
    for _, k in ipairs({key, firingsKey, firingIndexKey}) do redis.call('PEXPIRE', k, ARGV[7]) end
  end
  -- Only the newest firing records are kept.
  local over = redis.call('ZCARD', firingIndexKey) - tonumber(ARGV[6])
  if over > 0 then
    local popped = redis.call('ZPOPMIN', firingIndexKey, over)
    for i = 1, #popped, 2 do redis.call('HDEL', firingsKey, popped[i]) end
  end
elseif fields[2] ~= 'completed' then
  return {'INACTIVE', fields[2]}
end
local result = {'OK', '0', tooSoon}
if definition.at and redis.call('HGET', key, 'state') == 'completed' then result[2] = '1' end
for _, firingId in ipairs(redis.call('ZRANGE', firingIndexKey, 0, -1)) do
  local firing = cjson.decode(redis.call('HGET', firingsKey, firingId))
  if firing.state == 'starting' then
    table.insert(result, firing.firingId)
    table.insert(result, firing.scheduledFor)
    table.insert(result, firing.taskId)
  end
end
return result
