--[[
  Take one request's tokens from two of its principal's buckets at once, or from neither: the
  request rate's token and its body's bytes (limits.ingressBytesPerSecond), both in the owner's
  slot, in one round trip instead of two. A cost larger than a bucket's capacity costs the whole
  bucket (as takeToken's default mode); a refusal takes nothing from either bucket.
  KEYS[1], KEYS[2] bucket hashes {tokens, atMs}
  ARGV[1..3] the first bucket's refill rate (tokens per second, > 0), capacity (>= 1) and cost
  ARGV[4..6] the same of the second
  Returns {1, 0, 0} when both were taken; otherwise {0, ms until both can pay, 1 or 2: the
  bucket that waits longer}.
  @include tokenBucket
]]
local now = __bucketNow()
local rates = { tonumber(ARGV[1]), tonumber(ARGV[4]) }
local capacities = { tonumber(ARGV[2]), tonumber(ARGV[5]) }
local costs = { math.min(capacities[1], tonumber(ARGV[3])), math.min(capacities[2], tonumber(ARGV[6])) }
local tokens, waitMs, waiting = {}, 0, 0
for i = 1, 2 do
  tokens[i] = __bucketTokens(KEYS[i], rates[i], capacities[i], now)
  local wait = __bucketWaitMs(tokens[i], costs[i], rates[i])
  if wait > waitMs then waitMs, waiting = wait, i end
end
local taken = waiting == 0
for i = 1, 2 do
  __bucketStore(KEYS[i], taken and tokens[i] - costs[i] or tokens[i], rates[i], capacities[i], now)
end
return {taken and 1 or 0, waitMs, waiting}
