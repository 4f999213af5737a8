--[[
  Extend a lease this worker still holds; a replaced worker must not revive it.
  KEYS[1] lease
  ARGV[1] worker id   ARGV[2] lease ttl (ms)
  Returns 1 when extended, 0 when the lease is another worker's (or gone)
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
