--[[
  Decide about one entry of an owner's active set for the reconciler, atomically with the
  removal, so a task resumed between a read and the removal keeps its entry.
  An entry whose task is gone or no longer has a turn queued or running is removed (it would
  count against the owner's active-task cap forever). A task with no lease, not updated for
  ARGV[3] ms, is a candidate: its turn job may be gone.
  KEYS[1] task hash   KEYS[2] lease   KEYS[3] owner's active tasks (zset)
  ARGV[1] taskId   ARGV[2] now (ms)   ARGV[3] how long an open task must be quiet (ms)
  ARGV[4] how long a parked coordinator must be quiet before it is woken to re-check its assignments (ms)
  Returns {'REMOVED', state|''} | {'RUNNING'} | {'PARKED'} | {'RECENT'}
        | {'CANDIDATE', turn, ownerKey, contextId, parentTaskId|''}
        | {'WAKE', turn, ownerKey, contextId} (a parked coordinator quiet for long: a lost settle is repaired when it runs)
]]
local fields = redis.call('HMGET', KEYS[1], 'state', 'turn', 'updatedAtMs', 'owner', 'contextId', 'parentTaskId')
local state = fields[1]
if not state then
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {'REMOVED', ''}
end
if state ~= 'TASK_STATE_SUBMITTED' and state ~= 'TASK_STATE_WORKING' then
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {'REMOVED', state}
end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'RUNNING'} end
-- A coordinator's turn parked while its assignments run has no job on purpose.
local quiet = tonumber(ARGV[2]) - tonumber(fields[3] or '0')
if redis.call('HGET', KEYS[1], 'suspended') == '1' then
  if quiet >= tonumber(ARGV[4]) then return {'WAKE', fields[2], fields[4], fields[5]} end
  return {'PARKED'}
end
if quiet < tonumber(ARGV[3]) then return {'RECENT'} end
return {'CANDIDATE', fields[2], fields[4], fields[5], fields[6] or ''}
