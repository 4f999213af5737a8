--[[
  Cancel a task (spec 3.1.5). A task no turn is running for (queued and not yet leased, or
  waiting for input) is canceled here at once and its lease generation bumped, so a worker
  that picks up its queued turn later can neither start nor write. A running turn is asked
  to stop over the cancel channel; its worker finalizes it as canceled.
  The task's slot only: the owner's indexes and active set follow (src/store/owner-index.ts).
  KEYS[1] task hash   KEYS[2] events   KEYS[3] lease   KEYS[4] inbox   KEYS[5] history   KEYS[6] turns
  KEYS[7] messageIds   KEYS[8] steps
  KEYS[9] emitted digests of the turn's runs (a parked coordinator's): the turn is over, so they go
  KEYS[10] pending artifact chunks (see appendEvents): kept with the task, read with its snapshot
  ARGV[1] ownerKey   ARGV[2] now (ms)   ARGV[3] now (ISO)   ARGV[4] event channel
  ARGV[5] cancel channel   ARGV[6] taskId   ARGV[7] retention of a terminal task (s)
  ARGV[8] who requested it when it was not the owner ('' = the owner): an operator, "operator:<tenant>/<subject>";
          kept in the hash (cancelRequestedBy, first request wins) and named in the events' cancellation metadata (requestedBy)
  ARGV[9] the generation the caller expects the task at ('' = any; docs/task-generations.md)
  Returns {'NOT_FOUND'} | {'NOT_CANCELABLE', state} | {'CANCELED'} | {'REQUESTED'}
        | {'GENERATION_MISMATCH', current generation} (nothing changed)
  Emits: a status update with metadata.cancellation.stage "requested" (first request for a running
  turn) or the final TASK_STATE_CANCELED update with stage "stopped".
  @bounds-events KEYS[2]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include terminal
  @include appendEvent
]]
local owner = redis.call('HGET', KEYS[1], 'owner')
if (not owner) or owner ~= ARGV[1] then return {'NOT_FOUND'} end
if ARGV[9] ~= '' then
  local current = redis.call('HGET', KEYS[1], 'generation') or '0'
  if current ~= ARGV[9] then return {'GENERATION_MISMATCH', current} end
end
local state = redis.call('HGET', KEYS[1], 'state')
if __isTerminal(state) then
  return {'NOT_CANCELABLE', state}
end
local firstRequest = redis.call('HSETNX', KEYS[1], 'cancelRequestedAtMs', ARGV[2])
local requestedBy = ''
if ARGV[8] ~= '' then
  if firstRequest == 1 then redis.call('HSET', KEYS[1], 'cancelRequestedBy', ARGV[8]) end
  requestedBy = ',"requestedBy":' .. cjson.encode(ARGV[8])
end
local contextId = redis.call('HGET', KEYS[1], 'contextId')
-- A coordinator's parked turn (waiting for its assignments) runs nowhere: it is canceled here.
local parked = redis.call('HGET', KEYS[1], 'suspended') == '1'
local running = (state == 'TASK_STATE_WORKING' and not parked) or redis.call('EXISTS', KEYS[3]) == 1
if running then
  if firstRequest == 1 then
    -- Stage 1 of 3 (requested): announced with the task's unchanged status.
    local requested = '{"statusUpdate":{"taskId":' .. cjson.encode(ARGV[6]) .. ',"contextId":' .. cjson.encode(contextId)
      .. ',"status":' .. redis.call('HGET', KEYS[1], 'status')
      .. ',"metadata":{"cancellation":{"stage":"requested","at":' .. cjson.encode(ARGV[3]) .. requestedBy .. '}}}}'
    local requestedId = __appendEvent(KEYS[1], KEYS[2], ARGV[4], requested)
  end
  redis.call('PUBLISH', ARGV[5], ARGV[6])
  return {'REQUESTED'}
end
redis.call('HINCRBY', KEYS[1], 'leaseGeneration', 1)
redis.call('DEL', KEYS[9])
for _, message in ipairs(redis.call('LRANGE', KEYS[4], 0, -1)) do redis.call('RPUSH', KEYS[5], message) end
redis.call('DEL', KEYS[4])
redis.call('HDEL', KEYS[1], 'inboxTrace')
local status = '{"state":"TASK_STATE_CANCELED","timestamp":' .. cjson.encode(ARGV[3]) .. '}'
redis.call('HSET', KEYS[1], 'status', status, 'state', 'TASK_STATE_CANCELED', 'updatedAtMs', ARGV[2],
  'finishedAtMs', ARGV[2], 'cancelStoppedAtMs', ARGV[2], 'cancelOutcome', 'TASK_STATE_CANCELED')
local event = '{"statusUpdate":{"taskId":' .. cjson.encode(ARGV[6]) .. ',"contextId":' .. cjson.encode(contextId)
  .. ',"status":' .. status .. ',"metadata":{"cancellation":{"stage":"stopped","at":' .. cjson.encode(ARGV[3]) .. requestedBy .. '}}}}'
local id = __appendEvent(KEYS[1], KEYS[2], ARGV[4], event)
for _, key in ipairs({KEYS[1], KEYS[2], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[10]}) do redis.call('EXPIRE', key, ARGV[7]) end
return {'CANCELED'}
