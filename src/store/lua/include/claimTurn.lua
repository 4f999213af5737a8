--[[
  The body of claimTurn-3.lua as a function, for that script and for acceptClaimedMessage-13.lua
  (the owner's claim and the accept in one call, on a single Redis). Its parameters are named KEYS
  and ARGV so the body reads them exactly as claimTurn-3.lua's header lists them; each caller
  passes its own. Needs ownerQuota before it.
]]
local function __claimTurn(KEYS, ARGV)
  local resumes = ARGV[4] == '1'
  local cap = tonumber(ARGV[3])
  if resumes and cap > 0 and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
    local active = redis.call('ZCARD', KEYS[1])
    if active >= cap then return {'TOO_MANY_ACTIVE', active} end
  end
  local charge = tonumber(ARGV[5])
  if charge > 0 then
    local held = __quotaHeld(KEYS[2], ARGV[1])
    local refusal = __quotaRefusal(held, KEYS[3], charge, tonumber(ARGV[6]), 0, false)
    if refusal then return refusal end
    __quotaCharge(KEYS[2], KEYS[3], ARGV[1], charge, ARGV[7], held)
  end
  local added = 0
  if resumes then added = redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1]) end
  return {'CLAIMED', redis.call('ZCARD', KEYS[1]), added}
end
