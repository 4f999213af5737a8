--[[
  A token bucket of the limits (a hash {tokens, atMs}), refilled continuously by Redis' clock so
  that every gateway shares one notion of time and one bucket. Included by takeToken and
  takeTokenPair (src/store/scripts.ts, `@include tokenBucket`).
]]
local function __bucketNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- The tokens the bucket holds at `now`: what was left, plus what refilled since, up to the capacity.
local function __bucketTokens(key, rate, capacity, now)
  local bucket = redis.call('HMGET', key, 'tokens', 'atMs')
  local tokens = tonumber(bucket[1]) or capacity
  local at = tonumber(bucket[2]) or now
  return math.min(capacity, tokens + math.max(0, now - at) * rate / 1000)
end

-- The ms until a bucket holding `tokens` holds `needed` (0 when it does already).
local function __bucketWaitMs(tokens, needed, rate)
  if tokens >= needed then return 0 end
  return math.ceil((needed - tokens) * 1000 / rate)
end

local function __bucketStore(key, tokens, rate, capacity, now)
  redis.call('HSET', key, 'tokens', tostring(tokens), 'atMs', now)
  -- A bucket that would be full again carries no information: let it go (once it is, not before:
  -- one below zero keeps its debt).
  redis.call('PEXPIRE', key, __bucketWaitMs(tokens, capacity, rate) + 1000)
end
