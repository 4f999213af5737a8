--[[
  Give a lease up (at shutdown) so the next worker need not wait for it to lapse. Only the
  worker that holds it, under the generation it was granted, may: a replaced worker's release
  must not free its successor's lease.
  KEYS[1] task hash   KEYS[2] lease
  ARGV[1] lease generation   ARGV[2] worker id
  Returns {'STALE'} | {'RELEASED', 0|1}
  @include fence
]]
if __leaseIsStale() or redis.call('GET', KEYS[2]) ~= ARGV[2] then return {'STALE'} end
return {'RELEASED', redis.call('DEL', KEYS[2])}
