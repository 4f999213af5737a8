--[[
  Record a coordinator's delegation and its assignments (children already created), fenced by
  the coordinator's lease generation. Idempotent: a delegation or assignment recorded before
  (by an earlier attempt of the same turn) is kept as it was, so a retry neither duplicates
  nor reorders the queue.
  KEYS[1] coordinator task hash   KEYS[2] assignments   KEYS[3] pending assignments (list)
  KEYS[4] delegations             KEYS[5] slots
  ARGV[1] lease generation   ARGV[2] delegation name   ARGV[3] delegation settings JSON
  ARGV[4..] assignment record JSON each (with taskId), in FIFO order
  Returns {'STALE'} | {'RECORDED', newly queued count}
  @include fence
]]
if __leaseIsStale() then return {'STALE'} end
redis.call('HSETNX', KEYS[4], ARGV[2], ARGV[3])
local added = 0
for i = 4, #ARGV do
  local record = cjson.decode(ARGV[i])
  if redis.call('HSETNX', KEYS[2], record.taskId, ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[3], record.taskId)
    added = added + 1
  end
end
redis.call('HSETNX', KEYS[5], 'total', 0)
return {'RECORDED', added}
