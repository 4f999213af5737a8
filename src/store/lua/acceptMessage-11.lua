--[[
  Accept a follow-up message for an existing task (spec 3.4).
  KEYS[1] task hash   KEYS[2] history   KEYS[3] inbox   KEYS[4] messageIds
  KEYS[5] events      KEYS[6] turns     KEYS[7] owner task index   KEYS[8] owner context index
  KEYS[9] owner's active tasks (zset)   KEYS[10] assignments (a coordinator's)   KEYS[11] questions
  ARGV[1] ownerKey   ARGV[2] contextId sent by the caller ('' if none)   ARGV[3] message JSON
  ARGV[4] messageId  ARGV[5] now (ms)  ARGV[6] now (ISO)  ARGV[7] event channel  ARGV[8] taskId
  ARGV[9] most active tasks the owner may have (0 = no cap)
  Returns {'NOT_FOUND'} | {'CONTEXT_MISMATCH'} | {'DUPLICATE', turn} | {'TERMINAL', state}
        | {'TOO_MANY_ACTIVE', count} (resuming it would pass the owner's cap; nothing changed)
        | {'FORWARDED', child task id} (a coordinator asked on behalf of an assignment: the caller
          forwards the message to that child; the coordinator's turn stays parked)
        | {'RESUMED', turn} (no turn ran: the message starts the next one; caller enqueues it)
        | {'QUEUED', turn}  (a turn is running or queued: the message is the next turn's input)
  Emits on RESUMED: a TASK_STATE_SUBMITTED status update.
]]
local owner = redis.call('HGET', KEYS[1], 'owner')
if (not owner) or owner ~= ARGV[1] then return {'NOT_FOUND'} end
local contextId = redis.call('HGET', KEYS[1], 'contextId')
if ARGV[2] ~= '' and ARGV[2] ~= contextId then return {'CONTEXT_MISMATCH'} end

-- The task's new status, stored, indexed and announced as one status update.
local function announce(state, status)
  redis.call('HSET', KEYS[1], 'status', status, 'state', state, 'updatedAtMs', ARGV[5])
  redis.call('ZADD', KEYS[7], ARGV[5], ARGV[8])
  redis.call('ZADD', KEYS[8], ARGV[5], ARGV[8])
  local event = '{"statusUpdate":{"taskId":' .. cjson.encode(ARGV[8]) .. ',"contextId":' .. cjson.encode(contextId)
    .. ',"status":' .. status .. '}}'
  local id = redis.call('XADD', KEYS[5], '*', 'r', event)
  redis.call('PUBLISH', ARGV[7], id .. '\n' .. event)
end

if redis.call('SISMEMBER', KEYS[4], ARGV[4]) == 1 then
  return {'DUPLICATE', redis.call('HGET', KEYS[1], 'turn')}
end
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'TASK_STATE_COMPLETED' or state == 'TASK_STATE_FAILED' or state == 'TASK_STATE_CANCELED'
  or state == 'TASK_STATE_REJECTED' then
  return {'TERMINAL', state}
end
local awaiting = redis.call('HGET', KEYS[1], 'awaitingChild')
if awaiting and state == 'TASK_STATE_INPUT_REQUIRED' then
  redis.call('SADD', KEYS[4], ARGV[4])
  redis.call('RPUSH', KEYS[2], ARGV[3])
  redis.call('HDEL', KEYS[1], 'awaitingChild')
  local record = cjson.decode(redis.call('HGET', KEYS[10], awaiting))
  record.state = 'running'
  record.question = nil
  redis.call('HSET', KEYS[10], awaiting, cjson.encode(record))
  local message = {messageId = ARGV[4] .. ':forwarded', role = 'ROLE_AGENT', taskId = ARGV[8], contextId = contextId,
    parts = {{text = 'Forwarded your answer to assignment ' .. record.index .. ' (' .. record.role .. ').'}}}
  announce('TASK_STATE_WORKING', cjson.encode({state = 'TASK_STATE_WORKING', timestamp = ARGV[6], message = message}))
  return {'FORWARDED', awaiting}
end
local resumes = state == 'TASK_STATE_INPUT_REQUIRED' or state == 'TASK_STATE_AUTH_REQUIRED'
local cap = tonumber(ARGV[9])
if resumes and cap > 0 and not redis.call('ZSCORE', KEYS[9], ARGV[8]) then
  local active = redis.call('ZCARD', KEYS[9])
  if active >= cap then return {'TOO_MANY_ACTIVE', active} end
end
redis.call('SADD', KEYS[4], ARGV[4])
if resumes then
  redis.call('ZADD', KEYS[9], ARGV[5], ARGV[8])
  local start = redis.call('LLEN', KEYS[2])
  redis.call('RPUSH', KEYS[2], ARGV[3])
  local turn = redis.call('HINCRBY', KEYS[1], 'turn', 1)
  redis.call('HSET', KEYS[1], 'turnInputStart', start, 'turnAttempts', 0, 'turnHandBacks', 0, 'turnBudgetSpent', 0)
  redis.call('HSET', KEYS[6], turn, cjson.encode({turn = turn, acceptedAtMs = tonumber(ARGV[5]), inputMessageIds = {ARGV[4]}}))
  announce('TASK_STATE_SUBMITTED', '{"state":"TASK_STATE_SUBMITTED","timestamp":' .. cjson.encode(ARGV[6]) .. '}')
  return {'RESUMED', turn}
end
redis.call('RPUSH', KEYS[3], ARGV[3])
return {'QUEUED', redis.call('HGET', KEYS[1], 'turn')}
