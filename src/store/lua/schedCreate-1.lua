--[[
  Store a new schedule (after its owner's claim). Idempotent: an existing record is left as is.
  One slot: the schedule's.
  KEYS[1] schedule hash
  ARGV[1] scheduleId   ARGV[2] ownerKey   ARGV[3] definition JSON   ARGV[4] now (ms)
  ARGV[5] handled up to (ms): firing times at or before it never fire (now; just before a one-time schedule's time)
  Returns {'CREATED'} | {'EXISTS'}
]]
local key = KEYS[1]
if redis.call('EXISTS', key) == 1 then return {'EXISTS'} end
redis.call('HSET', key, 'id', ARGV[1], 'owner', ARGV[2], 'definition', ARGV[3], 'state', 'active',
  'createdAtMs', ARGV[4], 'updatedAtMs', ARGV[4], 'lastScheduledForMs', ARGV[5], 'firedCount', 0, 'skippedCount', 0, 'failedCount', 0)
return {'CREATED'}
