--[[
  Claim a place for a new schedule in its owner's index, within the owner's limit. Idempotent on
  the schedule id (a retried create finds its claim).
  One slot: the owner's.
  KEYS[1] owner's schedules index (zset scheduleId → created-at ms)
  ARGV[1] scheduleId   ARGV[2] now (ms)   ARGV[3] most schedules the owner may have
  Returns {'CLAIMED'} | {'TOO_MANY', count}
]]
local indexKey = KEYS[1]
if redis.call('ZSCORE', indexKey, ARGV[1]) then return {'CLAIMED'} end
local count = redis.call('ZCARD', indexKey)
if count >= tonumber(ARGV[3]) then return {'TOO_MANY', count} end
redis.call('ZADD', indexKey, ARGV[2], ARGV[1])
return {'CLAIMED'}
