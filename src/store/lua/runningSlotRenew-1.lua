--[[
  Renew running turns' slots in one set: moves each given task's expiry to now + ttl. A plain
  ZADD, not XX: a slot that expired while Redis was out of reach (or that a duplicate delivery
  gave back) still runs.
  KEYS[1] running turns (zset: task id → ms its slot expires unless renewed)
  ARGV[1] how long the slots last unless renewed again (ms)   ARGV[2..] task ids
  Returns {the number of slots renewed}.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + ttl, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ttl)
return {#ARGV - 1}
