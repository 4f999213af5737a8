--[[
  Mark an owner busy in its tenant and count the tenant's busy owners (the tenant half of the
  worker pool's fair share): drops owners whose window has passed, (re)starts this owner's. Uses
  Redis' clock, so gateways with skewed clocks agree on who is still busy.
  KEYS[1] the tenant's busy owners (zset: owner key → ms until which it counts as busy)
  ARGV[1] owner key   ARGV[2] how long it counts as busy (ms)
  Returns {busy owners, this one included}.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {redis.call('ZCARD', KEYS[1])}
