--[[
  Gives back what claimTurn charged for a message the task then did not take (a duplicate, a
  refusal): the owner's slot only. A crash before it leaves the task charged a little too much,
  which the quota sweep releases with the task (quotaRelease).
  KEYS[1] owner's storage quota (hash)   KEYS[2] owner's quota checks (zset)
  ARGV[1] taskId   ARGV[2] bytes to give back
  Returns {bytes the task is charged now}
]]
local charge = tonumber(ARGV[2])
local left = redis.call('HINCRBY', KEYS[1], 't:' .. ARGV[1], -charge)
local bytes = redis.call('HINCRBY', KEYS[1], 'bytes', -charge)
if bytes < 0 then redis.call('HSET', KEYS[1], 'bytes', 0) end
if left <= 0 then
  -- The task's only charge: it was never stored on the owner's account.
  redis.call('HDEL', KEYS[1], 't:' .. ARGV[1])
  local tasks = redis.call('HINCRBY', KEYS[1], 'tasks', -1)
  if tasks < 0 then redis.call('HSET', KEYS[1], 'tasks', 0) end
  redis.call('ZREM', KEYS[2], ARGV[1])
  left = 0
end
return {left}
