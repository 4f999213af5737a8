--[[
  Take a running turn's slot in one set of running turns (an owner's, or a tenant's): drops the
  slots that expired; a task already in the set is renewed and counted once (a lost worker's
  run, recovered); else it is added unless `cap` run already. Uses Redis' clock, so workers with
  skewed clocks agree on what has expired.
  KEYS[1] running turns (zset: task id → ms its slot expires unless renewed)
  ARGV[1] task id   ARGV[2] cap (0 = no cap)   ARGV[3] how long the slot lasts unless renewed (ms)
  Returns {taken (1/0), running, fresh (1: added now, 0: it was there)}.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, redis.call('ZCARD', KEYS[1]), 0}
end
local running = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[2])
if cap > 0 and running >= cap then return {0, running, 0} end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, running + 1, 1}
