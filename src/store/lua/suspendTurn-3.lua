--[[
  Park a coordinator's turn while its assignments run: the lease is released (no worker holds
  the turn, so it holds no worker slot) and the run that parked it is not counted as an
  attempt. The turn resumes as a new run when its assignments settle (a wake job).
  KEYS[1] task hash   KEYS[2] lease   KEYS[3] events
  ARGV[1] lease generation   ARGV[2] status JSON (TASK_STATE_WORKING, saying what it waits for)
  ARGV[3] status event JSON   ARGV[4] now (ms)   ARGV[5] event channel
  Returns {'STALE'} | {'SUSPENDED'}
  @once: a call re-sent after a lost connection returns the first reply (src/store/scripts.ts).
  @bounds-events KEYS[3]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include fence
  @include appendEvent
]]
if __leaseIsStale() then return {'STALE'} end
redis.call('DEL', KEYS[2])
redis.call('HINCRBY', KEYS[1], 'turnAttempts', -1)
-- Fence out anything the parked run still tries to write.
redis.call('HINCRBY', KEYS[1], 'leaseGeneration', 1)
redis.call('HSET', KEYS[1], 'suspended', 1, 'status', ARGV[2], 'state', 'TASK_STATE_WORKING', 'updatedAtMs', ARGV[4])
local id = __appendEvent(KEYS[1], KEYS[3], ARGV[5], ARGV[3])
return {'SUSPENDED'}
