--[[
  Accept a follow-up message for an existing task (spec 3.4).
  KEYS[1] task hash   KEYS[2] history   KEYS[3] inbox   KEYS[4] messageIds
  KEYS[5] events      KEYS[6] turns     KEYS[7] owner task index   KEYS[8] owner context index
  KEYS[9] owner's active tasks (zset)   KEYS[10] assignments (a coordinator's)   KEYS[11] questions
  KEYS[12] owner's storage quota (hash)   KEYS[13] owner's quota checks (zset)
  ARGV[1] ownerKey   ARGV[2] contextId sent by the caller ('' if none)   ARGV[3] message JSON
  ARGV[4] messageId  ARGV[5] now (ms)  ARGV[6] now (ISO)  ARGV[7] event channel  ARGV[8] taskId
  ARGV[9] most active tasks the owner may have (0 = no cap)
  ARGV[10] the agent's input policy for a task whose turn is queued or running: enqueue | reject | interrupt
  ARGV[11] cancel channel (an interrupt reaches the worker running the turn there as "<taskId> <turn>")
  ARGV[12] the scopes the caller's credentials granted, JSON array: kept (for ctx.caller) when the message is taken
  ARGV[13] most messages that may wait for a running turn to end (0 = no bound)
  ARGV[14] digest of the message's content (parts, task, context, references): a messageId the task
    already took with other content is a conflict, never a silently dropped message
  ARGV[15] the extensions the request activated, JSON array: kept (for ctx.extensions) when the message is taken
  ARGV[16] bytes the message's storage charges to the owner (0 = not charged)   ARGV[17] most bytes the owner may have stored (0 = no quota)
  ARGV[18] when to first look whether the task still exists, if it was not charged before (ms)
  ARGV[19] the sending request's W3C trace context, JSON ('' = none): a message that waits for the
    running turn leaves it as 'inboxTrace' (the first waiting message's wins), the trace the
    next turn continues (finishTurn)
  Returns {'NOT_FOUND'} | {'OVER_QUOTA', 'bytes', stored, the earliest quota check (ms, '' if none)} (nothing changed) | {'CONTEXT_MISMATCH'} | {'DUPLICATE', turn} | {'TERMINAL', state}
        | {'CONFLICT'} (the messageId was taken before with other content; nothing changed)
        | {'BUSY', state} (policy reject: a turn is queued or running; nothing changed)
        | {'INBOX_FULL', count} (that many messages already wait for the running turn; nothing changed)
        | {'JOINED', turn} (policy interrupt, the turn has not started: the message joins its input)
        | {'INTERRUPTING', turn} (policy interrupt: the running turn is asked to stop; the message
          is the next turn's input, which starts as soon as it stops)
        | {'TOO_MANY_ACTIVE', count} (resuming it would pass the owner's cap; nothing changed)
        | {'FORWARDED', child task id} (a coordinator asked on behalf of an assignment: the caller
          forwards the message to that child; the coordinator's turn stays parked)
        | {'RESUMED', turn, active} (no turn ran: the message starts the next one; the caller enqueues it, with the
          owner's count of tasks queued or running as its priority)
        | {'QUEUED', turn}  (a turn is running or queued: the message is the next turn's input)
  Emits on RESUMED: a TASK_STATE_SUBMITTED status update. On INTERRUPTING (the first interrupt of a
  turn): a status update with metadata.cancellation {stage "requested", scope "turn", turn}.
  @bounds-events KEYS[5]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
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

-- The message is the task's from now on: its id (re-sends are duplicates), its digest, and what
-- the request that sent it carried for the adapter (ctx.caller.scopes, ctx.extensions).
local charge = tonumber(ARGV[16])
local function take()
  if charge > 0 then
    redis.call('HINCRBY', KEYS[12], 'bytes', charge)
    -- A task stored before its owner was charged (quotas turned on since) is charged from now on.
    if redis.call('HINCRBY', KEYS[12], 't:' .. ARGV[8], charge) == charge then
      redis.call('HINCRBY', KEYS[12], 'tasks', 1)
      redis.call('ZADD', KEYS[13], 'NX', ARGV[18], ARGV[8])
    end
  end
  redis.call('SADD', KEYS[4], ARGV[4])
  redis.call('HSET', KEYS[1], 'callerScopes', ARGV[12], 'callerExtensions', ARGV[15])
  if ARGV[14] ~= '' then redis.call('HSET', KEYS[1], 'digest:' .. ARGV[4], ARGV[14]) end
end

if redis.call('SISMEMBER', KEYS[4], ARGV[4]) == 1 then
  -- A task created before digests were kept has none for its messages: taken as the same.
  local taken = redis.call('HGET', KEYS[1], 'digest:' .. ARGV[4])
  if taken and ARGV[14] ~= '' and taken ~= ARGV[14] then return {'CONFLICT'} end
  return {'DUPLICATE', redis.call('HGET', KEYS[1], 'turn')}
end
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'TASK_STATE_COMPLETED' or state == 'TASK_STATE_FAILED' or state == 'TASK_STATE_CANCELED'
  or state == 'TASK_STATE_REJECTED' then
  return {'TERMINAL', state}
end
local maxBytes = tonumber(ARGV[17])
if charge > 0 and maxBytes > 0 then
  local storedBytes = tonumber(redis.call('HGET', KEYS[12], 'bytes') or '0')
  if storedBytes + charge > maxBytes then
    local first = redis.call('ZRANGE', KEYS[13], 0, 0, 'WITHSCORES')
    return {'OVER_QUOTA', 'bytes', storedBytes, first[2] or ''}
  end
end
local awaiting = redis.call('HGET', KEYS[1], 'awaitingChild')
if awaiting and state == 'TASK_STATE_INPUT_REQUIRED' then
  take()
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
local policy = ARGV[10]
if not resumes and policy == 'reject' then return {'BUSY', state} end
local parked = redis.call('HGET', KEYS[1], 'suspended') == '1'
local maxQueued = tonumber(ARGV[13])
local joins = policy == 'interrupt' and not parked and state == 'TASK_STATE_SUBMITTED'
if not resumes and not joins and maxQueued > 0 then
  local waiting = redis.call('LLEN', KEYS[3])
  if waiting >= maxQueued then return {'INBOX_FULL', waiting} end
end
-- A parked coordinator's turn is its assignments' business: the message queues (policy enqueue).
if not resumes and policy == 'interrupt' and not parked then
  take()
  local turn = redis.call('HGET', KEYS[1], 'turn')
  if state == 'TASK_STATE_SUBMITTED' then
    -- Not started yet: nothing to stop, the message is more input of the same turn.
    redis.call('RPUSH', KEYS[2], ARGV[3])
    local record = cjson.decode(redis.call('HGET', KEYS[6], turn))
    table.insert(record.inputMessageIds, ARGV[4])
    redis.call('HSET', KEYS[6], turn, cjson.encode(record))
    return {'JOINED', turn}
  end
  redis.call('RPUSH', KEYS[3], ARGV[3])
  if ARGV[19] ~= '' then redis.call('HSETNX', KEYS[1], 'inboxTrace', ARGV[19]) end
  if redis.call('HGET', KEYS[1], 'interruptTurn') ~= turn then
    redis.call('HSET', KEYS[1], 'interruptTurn', turn, 'interruptRequestedAtMs', ARGV[5])
    local requested = '{"statusUpdate":{"taskId":' .. cjson.encode(ARGV[8]) .. ',"contextId":' .. cjson.encode(contextId)
      .. ',"status":' .. redis.call('HGET', KEYS[1], 'status')
      .. ',"metadata":{"cancellation":{"stage":"requested","scope":"turn","turn":' .. turn .. ',"reason":"interrupted by a new message","at":'
      .. cjson.encode(ARGV[6]) .. '}}}}'
    local id = redis.call('XADD', KEYS[5], '*', 'r', requested)
    redis.call('PUBLISH', ARGV[7], id .. '\n' .. requested)
  end
  redis.call('PUBLISH', ARGV[11], ARGV[8] .. ' ' .. turn)
  return {'INTERRUPTING', turn}
end
take()
if resumes then
  redis.call('ZADD', KEYS[9], ARGV[5], ARGV[8])
  local start = redis.call('LLEN', KEYS[2])
  redis.call('RPUSH', KEYS[2], ARGV[3])
  local turn = redis.call('HINCRBY', KEYS[1], 'turn', 1)
  redis.call('HSET', KEYS[1], 'turnInputStart', start, 'turnAttempts', 0, 'turnHandBacks', 0, 'turnBudgetSpent', 0)
  redis.call('HSET', KEYS[6], turn, cjson.encode({turn = turn, acceptedAtMs = tonumber(ARGV[5]), inputMessageIds = {ARGV[4]}}))
  announce('TASK_STATE_SUBMITTED', '{"state":"TASK_STATE_SUBMITTED","timestamp":' .. cjson.encode(ARGV[6]) .. '}')
  return {'RESUMED', turn, redis.call('ZCARD', KEYS[9])}
end
redis.call('RPUSH', KEYS[3], ARGV[3])
if ARGV[19] ~= '' then redis.call('HSETNX', KEYS[1], 'inboxTrace', ARGV[19]) end
return {'QUEUED', redis.call('HGET', KEYS[1], 'turn')}
