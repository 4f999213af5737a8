--[[
  Pause, resume or delete a schedule, for its owner. A resumed schedule counts its paused time as
  handled (firings it would have had while paused are not caught up: pausing said not to run).
  One slot: the schedule's.
  KEYS[1] schedule hash   KEYS[2] firings (hash firingId → JSON)   KEYS[3] firings index (zset firingId → scheduled-for ms)
  ARGV[1] ownerKey   ARGV[2] 'pause' | 'resume' | 'delete'   ARGV[3] now (ms)
  Returns {'NOT_FOUND'} | {'OK', state before, state after}
]]
local key, firingsKey, firingIndexKey = KEYS[1], KEYS[2], KEYS[3]
local fields = redis.call('HMGET', key, 'owner', 'state')
if (not fields[1]) or fields[1] ~= ARGV[1] then return {'NOT_FOUND'} end
local before = fields[2]
if ARGV[2] == 'delete' then
  redis.call('DEL', key, firingsKey, firingIndexKey)
  return {'OK', before, 'deleted'}
end
local after = before
if ARGV[2] == 'pause' and before == 'active' then after = 'paused' end
if ARGV[2] == 'resume' and before == 'paused' then
  after = 'active'
  local definition = cjson.decode(redis.call('HGET', key, 'definition'))
  -- A one-time schedule keeps its time: resumed after it, it is late (its lateness policy decides).
  if definition.cron then redis.call('HSET', key, 'lastScheduledForMs', ARGV[3]) end
end
if after ~= before then redis.call('HSET', key, 'state', after, 'updatedAtMs', ARGV[3]) end
return {'OK', before, after}
