--[[
  Update a journalled step (its result, or the external reference it recorded), fenced by the
  lease generation: a replaced worker cannot rewrite the journal.
  KEYS[1] task hash   KEYS[2] steps hash
  ARGV[1] lease generation   ARGV[2] step field ("<turn>:<name>")   ARGV[3] record JSON
  Returns {'STALE'} | {'OK'}
  @include fence
]]
if __leaseIsStale() then return {'STALE'} end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return {'OK'}
