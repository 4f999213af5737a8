--[[
  Release a lock only if this holder still owns it: a holder whose lock lapsed must not
  delete the lock another process took since.
  KEYS[1] lock   ARGV[1] the holder's token
  Returns {'RELEASED'} | {'NOT_HELD'}
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {'RELEASED'}
end
return {'NOT_HELD'}
