--[[
  Record how a firing's start went: its task was created and queued, or it could not be (the
  reason is kept; a firing is never dropped silently).
  One slot: the schedule's.
  KEYS[1] schedule hash   KEYS[2] firings
  ARGV[1] firingId   ARGV[2] 'started' | 'failed'   ARGV[3] taskId   ARGV[4] reason ('' = none)   ARGV[5] now (ms)
  Returns {'OK'} | {'GONE'}
]]
local json = redis.call('HGET', KEYS[2], ARGV[1])
if not json then return {'GONE'} end
local firing = cjson.decode(json)
if firing.state ~= 'starting' then return {'OK'} end
firing.state = ARGV[2]
firing.taskId = ARGV[3]
firing.startedAtMs = tonumber(ARGV[5])
if ARGV[4] ~= '' then firing.reason = ARGV[4] end
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(firing))
if ARGV[2] == 'failed' then
  redis.call('HINCRBY', KEYS[1], 'firedCount', -1)
  redis.call('HINCRBY', KEYS[1], 'failedCount', 1)
end
return {'OK'}
