--[[
  The body of claimTask-7.lua as a function, for that script and for createClaimedTask-14.lua (the claim
  and the create in one call, on a single Redis). Its parameters are named KEYS and ARGV so the
  body reads them exactly as claimTask-7.lua's header lists them; each caller passes its own.
  Needs ownerQuota and tokenBucket before it.
]]
local function __claimTask(KEYS, ARGV)
  local existing = redis.call('GET', KEYS[1])
  if existing then return {'CLAIMED_BEFORE', existing} end
  local rate = tonumber(ARGV[9])
  local bucketNow, bucketTokens, storedCost
  if rate > 0 then
    local burst = tonumber(ARGV[10])
    storedCost = math.min(burst, tonumber(ARGV[11]))
    bucketNow = __bucketNow()
    bucketTokens = __bucketTokens(KEYS[7], rate, burst, bucketNow)
    if bucketTokens < storedCost then return {'BYTE_RATE', __bucketWaitMs(bucketTokens, storedCost, rate)} end
  end
  local cap = tonumber(ARGV[4])
  if cap > 0 and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
    local active = redis.call('ZCARD', KEYS[2])
    if active >= cap then return {'TOO_MANY_ACTIVE', active} end
  end
  local charge = tonumber(ARGV[5])
  -- A task charged before (a sub-agent's derived id, claimed again once its key expired) is not charged twice.
  local held = charge > 0 and __quotaHeld(KEYS[3], ARGV[1])
  if held and not held.task then
    local refusal = __quotaRefusal(held, KEYS[4], charge, tonumber(ARGV[6]), tonumber(ARGV[7]), true)
    if refusal then return refusal end
    __quotaCharge(KEYS[3], KEYS[4], ARGV[1], charge, ARGV[8], held)
  end
  if rate > 0 then __bucketStore(KEYS[7], bucketTokens - storedCost, rate, tonumber(ARGV[10]), bucketNow) end
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  redis.call('ZADD', KEYS[5], 'GT', ARGV[2], ARGV[1])
  redis.call('ZADD', KEYS[6], 'GT', ARGV[2], ARGV[1])
  local due = 0
  if charge > 0 then due = redis.call('ZCOUNT', KEYS[4], '-inf', ARGV[2]) end
  return {'CLAIMED', redis.call('ZCARD', KEYS[2]), due}
end
