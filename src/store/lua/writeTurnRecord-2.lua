--[[
  Record a turn's progress (attempt, steps) without an event, fenced by the lease generation.
  KEYS[1] task hash   KEYS[2] turn records
  ARGV[1] lease generation   ARGV[2] turn number   ARGV[3] the turn record (JSON)
  Returns {'STALE'} | {'OK'}
  @include fence
]]
if __leaseIsStale() then return {'STALE'} end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return {'OK'}
