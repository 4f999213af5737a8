--[[
  Store one adapter value in the task hash (so it expires with the task), fenced by the lease
  generation: a replaced worker's adapter cannot overwrite what its successor keeps.
  KEYS[1] task hash
  ARGV[1] lease generation   ARGV[2] the value's field   ARGV[3] the value (JSON)
  Returns {'STALE'} | {'OK'}
  @include fence
]]
if __leaseIsStale() then return {'STALE'} end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
return {'OK'}
