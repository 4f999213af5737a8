--[[
  Take one open stream's slot in one set of open streams (an owner's, or every gateway's): drops
  the slots that expired, then adds this one unless the set holds `cap` already. Uses Redis'
  clock, so gateways with skewed clocks agree on what has expired.
  KEYS[1] open streams (zset: stream id → ms its slot expires unless renewed)
  ARGV[1] stream id   ARGV[2] cap (0 = no cap)   ARGV[3] how long the slot lasts unless renewed (ms)
  Returns {1, open} when taken, {0, open} when the set is full.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local open = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[2])
if cap > 0 and open >= cap then return {0, open} end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, open + 1}
