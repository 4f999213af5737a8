--[[
  Renew the slots of open streams in one set: moves each given stream's expiry to now + ttl. A
  plain ZADD, not XX: a stream whose slot expired while Redis was out of reach is still open, and
  is counted again.
  KEYS[1] open streams (zset: stream id → ms its slot expires unless renewed)
  ARGV[1] how long the slots last unless renewed again (ms)   ARGV[2..] stream ids
  Returns {the number of streams renewed}.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local args = {}
for i = 2, #ARGV do
  args[#args + 1] = now + ttl
  args[#args + 1] = ARGV[i]
  if #args >= 1000 or i == #ARGV then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = {}
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
return {#ARGV - 1}
