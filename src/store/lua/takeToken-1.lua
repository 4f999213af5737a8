--[[
  Take a request's tokens from a principal's bucket (token bucket, refilled continuously): one,
  or more for a large request body (limits.requestBytesPerToken).
  Uses Redis' clock, so every gateway instance shares one notion of time and one bucket.
  KEYS[1] bucket hash {tokens, atMs}
  ARGV[1] refill rate (tokens per second, > 0)   ARGV[2] capacity (burst, >= 1)
  ARGV[3] tokens the request costs (1 to capacity; absent = 1)
  ARGV[4] '1': a charge after the fact (a large answer): always taken, the bucket may go down to
    -capacity, so the principal's next requests wait until it refills
  ARGV[4] '2': an answer paid before it is built (a task too large to charge after the read): taken
    when the bucket holds the cost, or, when the cost is more than it can hold, is full but for the
    token the request asking for the answer took; the whole
    cost is taken (not capped), so the bucket may go below zero by as much as the answer costs more
    than the bucket holds, and the principal's reads take their bytes' worth of time
  ARGV[5] with '1': a top-up for the caller's reserve (src/store/limits/token-reserve.ts), taken
    beside the charge only when the bucket still holds it once the charge is taken
  Returns {1, 0} when the tokens were taken ({1, ms until the bucket is out of debt, top-up taken}
  for a charge after the fact), {0, ms until they are available} otherwise.
  @include tokenBucket
]]
local now = __bucketNow()
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local tokens = __bucketTokens(KEYS[1], rate, capacity, now)
local cost = tonumber(ARGV[3] or '1') or 1
local taken, waitMs = 0, 0
local toppedUp = 0
if ARGV[4] == '1' then
  tokens = math.max(-capacity, tokens - math.min(capacity, cost))
  local topUp = tonumber(ARGV[5] or '0') or 0
  if topUp > 0 and tokens >= topUp then
    tokens = tokens - topUp
    toppedUp = topUp
  end
  taken = 1
  waitMs = __bucketWaitMs(tokens, 0, rate)
else
  -- What must be in the bucket, and what is taken: the cost capped at the burst, or for an
  -- answer paid first ('2') the whole cost once the bucket is full but for the request's token.
  local needed, charge = math.min(capacity, cost), math.min(capacity, cost)
  if ARGV[4] == '2' then needed, charge = math.min(cost, capacity - 1), cost end
  if tokens >= needed then
    tokens = tokens - charge
    taken = 1
  else
    waitMs = __bucketWaitMs(tokens, needed, rate)
  end
end
__bucketStore(KEYS[1], tokens, rate, capacity, now)
return {taken, waitMs, toppedUp}
