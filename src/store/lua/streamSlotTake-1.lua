--[[
  Take open streams' slots in one set of open streams (an owner's, or every gateway's): drops the
  slots that expired, then adds the given stream ids in order while the set holds fewer than
  `cap`. A gateway takes several slots of every gateway's set at once and hands them to its next
  streams itself (src/limits/stream-slots.ts); an owner's set is taken one slot at a time. Uses
  Redis' clock, so gateways with skewed clocks agree on what has expired.
  KEYS[1] open streams (zset: stream id → ms its slot expires unless renewed)
  ARGV[1] cap (0 = no cap)   ARGV[2] how long a slot lasts unless renewed (ms)
  ARGV[3] and on: the stream ids, in the order their slots are taken
  Returns {slots taken (the first ids given), open streams in the set after}: {0, open} when it was full.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local open = redis.call('ZCARD', KEYS[1])
local taken = 0
for i = 3, #ARGV do
  if cap > 0 and open >= cap then break end
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
  open = open + 1
  taken = taken + 1
end
if taken > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return {taken, open}
