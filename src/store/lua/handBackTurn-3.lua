--[[
  Hand a running turn back at shutdown, fenced by the lease generation. A hand-back is not a
  lost worker: the attempt this worker started is undone, so deploys in a row cannot fail a
  turn on maxTurnAttempts; the hand-back is counted instead (the task's turnHandBacks, and the
  turn record the caller passes). The lease is released so the next worker need not wait for
  it to lapse, and the generation is bumped so nothing the stopped adapter still has in
  flight can write.
  KEYS[1] task hash   KEYS[2] lease   KEYS[3] turns
  ARGV[1] lease generation   ARGV[2] workerId   ARGV[3] turn record JSON (its handBacks already counted)
  Returns {'STALE'} | {'HANDED_BACK', attempts, handBacks}
  @once: a call re-sent after a lost connection returns the first reply (src/store/scripts.ts).
  @include fence
]]
if __leaseIsStale() then return {'STALE'} end
local attempts = tonumber(redis.call('HGET', KEYS[1], 'turnAttempts') or '0')
if attempts > 0 then attempts = redis.call('HINCRBY', KEYS[1], 'turnAttempts', -1) end
local handBacks = redis.call('HINCRBY', KEYS[1], 'turnHandBacks', 1)
redis.call('HSET', KEYS[3], redis.call('HGET', KEYS[1], 'turn'), ARGV[3])
redis.call('HINCRBY', KEYS[1], 'leaseGeneration', 1)
if redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('DEL', KEYS[2]) end
return {'HANDED_BACK', attempts, handBacks}
