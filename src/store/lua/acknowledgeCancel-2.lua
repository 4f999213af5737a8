--[[
  Stage 2 of 3 of a cancellation (acknowledged): the worker running the turn saw the request —
  to cancel the task, or (input policy interrupt) to stop the running turn for a new message.
  Fenced by the lease generation; recorded once per field.
  KEYS[1] task hash   KEYS[2] events
  ARGV[1] lease generation   ARGV[2] event channel   ARGV[3] now (ms)   ARGV[4] event JSON
  ARGV[5] the task hash field that records it (cancelAcknowledgedAtMs, or interruptAcknowledged:<turn>)
  Returns {'STALE'} | {'OK'}
  Emits: the acknowledgement status update (metadata.cancellation.stage "acknowledged").
  @bounds-events KEYS[2]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include fence
  @include appendEvent
]]
if __leaseIsStale() then return {'STALE'} end
-- Too late to acknowledge: the turn already ended (on its own, or canceled).
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'TASK_STATE_WORKING' and state ~= 'TASK_STATE_SUBMITTED' then return {'OK'} end
if redis.call('HSETNX', KEYS[1], ARGV[5], ARGV[3]) == 1 then
  local id = __appendEvent(KEYS[1], KEYS[2], ARGV[2], ARGV[4])
end
return {'OK'}
