--[[
  Admit one request of a consumer: take a token from the consumer's bucket (refilled at its
  plan's rate on Redis' clock, so every gateway shares one bucket and one notion of time) and
  count the request in the consumer's usage of the day and of the month. A refused request
  changes nothing.
  KEYS[1] bucket hash {tokens, atMs}   KEYS[2] day usage hash   KEYS[3] month usage hash
  ARGV[1] tokens per second (0 = no rate limit, only counted)   ARGV[2] burst (>= 1)
  ARGV[3] day usage TTL (s)   ARGV[4] month usage TTL (s)
  Returns {1, 0} admitted | {0, ms until a token is there}
]]
local rate = tonumber(ARGV[1])
if rate > 0 then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local capacity = tonumber(ARGV[2])
  local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'atMs')
  local tokens = tonumber(bucket[1]) or capacity
  local at = tonumber(bucket[2]) or now
  tokens = math.min(capacity, tokens + math.max(0, now - at) * rate / 1000)
  if tokens < 1 then return {0, math.ceil((1 - tokens) * 1000 / rate)} end
  tokens = tokens - 1
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'atMs', now)
  -- A full bucket carries no information: it goes once it would be full again.
  redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) * 1000 / rate) + 1000)
end
redis.call('HINCRBY', KEYS[2], 'requests', 1)
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('HINCRBY', KEYS[3], 'requests', 1)
redis.call('EXPIRE', KEYS[3], ARGV[4])
return {1, 0}
