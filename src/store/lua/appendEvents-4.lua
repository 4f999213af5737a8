--[[
  Store and announce events of a running turn, fenced by the lease generation.
  KEYS[1] task hash   KEYS[2] events   KEYS[3] owner task index   KEYS[4] owner context index
  ARGV[1] lease generation   ARGV[2] event channel   ARGV[3] now (ms)   ARGV[4] taskId
  ARGV[5] artifacts JSON ('' = unchanged)   ARGV[6] status JSON ('' = unchanged)   ARGV[7] state ('' = unchanged)
  ARGV[8..] StreamResponse JSON of each event, in order
  Returns {'STALE'} when a newer generation holds the task, else {'OK', lastEventId}.
  @once: a call re-sent after a lost connection returns the first reply (src/store/scripts.ts).
]]
if redis.call('HGET', KEYS[1], 'leaseGeneration') ~= ARGV[1] then return {'STALE'} end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'artifacts', ARGV[5]) end
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[1], 'status', ARGV[6], 'state', ARGV[7], 'updatedAtMs', ARGV[3])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
  redis.call('ZADD', KEYS[4], ARGV[3], ARGV[4])
end
local id = ''
for i = 8, #ARGV do
  id = redis.call('XADD', KEYS[2], '*', 'r', ARGV[i])
  redis.call('PUBLISH', ARGV[2], id .. '\n' .. ARGV[i])
end
return {'OK', id}
