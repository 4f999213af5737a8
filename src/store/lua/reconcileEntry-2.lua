--[[
  Decide about one entry of an owner's active set for the reconciler, in the task's slot only: the
  entry itself lives in the owner's slot, so the caller drops it afterwards (ownerIndex, only while
  its score is still the one it read: a task resumed meanwhile keeps its entry).
  A task with no lease, not updated for ARGV[2] ms, is a candidate: its turn job may be gone. One whose
  lease was last taken by a run no job carries (turnWithoutJob: a turn started where it was accepted)
  has no job to wait for once that lease has lapsed: it is a candidate after ARGV[4] ms.
  KEYS[1] task hash   KEYS[2] lease
  ARGV[1] now (ms)   ARGV[2] how long an open task must be quiet (ms)
  ARGV[3] how long a parked coordinator must be quiet before it is woken to re-check its assignments (ms)
  ARGV[4] how long an open task whose last run had no job must be quiet (ms)
  Returns {'GONE'} | {'CLOSED', state, updatedAtMs} (no turn queued or running: the entry may go)
        | {'RUNNING'} | {'PARKED'} | {'RECENT'}
        | {'CANDIDATE', turn, ownerKey, contextId, parentTaskId|''}
        | {'WAKE', turn, ownerKey, contextId} (a parked coordinator quiet for long: a lost settle is repaired when it runs)
]]
local fields = redis.call('HMGET', KEYS[1], 'state', 'turn', 'updatedAtMs', 'owner', 'contextId', 'parentTaskId', 'turnWithoutJob')
local state = fields[1]
if not state then return {'GONE'} end
if state ~= 'TASK_STATE_SUBMITTED' and state ~= 'TASK_STATE_WORKING' then return {'CLOSED', state, fields[3] or '0'} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'RUNNING'} end
-- A coordinator's turn parked while its assignments run has no job on purpose.
local quiet = tonumber(ARGV[1]) - tonumber(fields[3] or '0')
if redis.call('HGET', KEYS[1], 'suspended') == '1' then
  if quiet >= tonumber(ARGV[3]) then return {'WAKE', fields[2], fields[4], fields[5]} end
  return {'PARKED'}
end
if quiet < tonumber(fields[7] == '1' and ARGV[4] or ARGV[2]) then return {'RECENT'} end
return {'CANDIDATE', fields[2], fields[4], fields[5], fields[6] or ''}
