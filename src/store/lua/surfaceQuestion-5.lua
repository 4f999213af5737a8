--[[
  Put the oldest waiting question of a coordinator's assignments to the coordinator's caller:
  the coordinator goes TASK_STATE_INPUT_REQUIRED with the child's question (its turn stays
  parked), and the caller's next message is forwarded to that child. One question at a time;
  only while the coordinator is parked and not already asking.
  KEYS[1] coordinator task hash   KEYS[2] history   KEYS[3] events   KEYS[4] assignments
  KEYS[5] questions (list)
  ARGV[1] now (ms)   ARGV[2] now (ISO)   ARGV[3] event channel   ARGV[4] message id for the question
  Returns {'NONE'} | {'ASKED', child task id}
  @bounds-events KEYS[3]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include appendEvent
]]
if redis.call('HGET', KEYS[1], 'suspended') ~= '1' or redis.call('HEXISTS', KEYS[1], 'awaitingChild') == 1
  or redis.call('HEXISTS', KEYS[1], 'cancelRequestedAtMs') == 1 then
  return {'NONE'}
end
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'TASK_STATE_WORKING' then return {'NONE'} end
local childId = redis.call('LPOP', KEYS[5])
if not childId then return {'NONE'} end
local record = cjson.decode(redis.call('HGET', KEYS[4], childId))
local taskId = redis.call('HGET', KEYS[1], 'id')
local contextId = redis.call('HGET', KEYS[1], 'contextId')
local message = {
  messageId = ARGV[4], role = 'ROLE_AGENT', taskId = taskId, contextId = contextId,
  parts = {{text = 'Assignment ' .. record.index .. ' (' .. record.role .. ') asks: ' .. (record.question or '')}},
  metadata = {a2aGateway = {awaitingAssignment = {taskId = childId, index = record.index, role = record.role}}},
}
local status = {state = 'TASK_STATE_INPUT_REQUIRED', timestamp = ARGV[2], message = message}
local statusJson = cjson.encode(status)
redis.call('RPUSH', KEYS[2], cjson.encode(message))
redis.call('HSET', KEYS[1], 'status', statusJson, 'state', 'TASK_STATE_INPUT_REQUIRED', 'updatedAtMs', ARGV[1],
  'awaitingChild', childId)
local event = '{"statusUpdate":{"taskId":' .. cjson.encode(taskId) .. ',"contextId":' .. cjson.encode(contextId)
  .. ',"status":' .. statusJson .. '}}'
local id = __appendEvent(KEYS[1], KEYS[3], ARGV[3], event)
return {'ASKED', childId}
