--[[
  The lease fence, one definition for every fenced script (`@include fence`): a write carries
  the lease generation it was granted (ARGV[1]); the task hash (KEYS[1]) holds the current one.
  A worker whose lease a newer one replaced is refused ({'STALE'}) and changes nothing.
]]
local function __leaseIsStale()
  return redis.call('HGET', KEYS[1], 'leaseGeneration') ~= ARGV[1]
end
