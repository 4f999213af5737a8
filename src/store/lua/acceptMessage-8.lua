--[[
  Accept a follow-up message for an existing task (spec 3.4).
  The task's own slot only: claimTurn (the owner's slot) ran first when the message needed the
  owner's active slot or quota, and the owner's indexes follow (src/store/owner-index.ts).
  KEYS[1] task hash   KEYS[2] history   KEYS[3] inbox   KEYS[4] messageIds
  KEYS[5] events      KEYS[6] turns     KEYS[7] assignments (a coordinator's)   KEYS[8] questions
  ARGV[1] ownerKey   ARGV[2] contextId sent by the caller ('' if none)   ARGV[3] message JSON
  ARGV[4] messageId  ARGV[5] now (ms)  ARGV[6] now (ISO)  ARGV[7] event channel  ARGV[8] taskId
  ARGV[9] '1' when the owner's claim refused the message (cap or quota): after the checks that come
    first (owner, context, duplicate, terminal) the script returns {'REFUSED'} and changes nothing
  ARGV[10] the agent's input policy for a task whose turn is queued or running: enqueue | reject | interrupt
  ARGV[11] cancel channel (an interrupt reaches the worker running the turn there as "<taskId> <turn>")
  ARGV[12] the scopes the caller's credentials granted, JSON array: kept (for ctx.caller) when the message is taken
  ARGV[13] most messages that may wait for a running turn to end (0 = no bound)
  ARGV[14] digest of the message's content (parts, task, context, references): a messageId the task
    already took with other content is a conflict, never a silently dropped message
  ARGV[15] the extensions the request activated, JSON array: kept (for ctx.extensions) when the message is taken
  ARGV[16] the sending request's W3C trace context, JSON ('' = none): a message that waits for the
    running turn leaves it as 'inboxTrace' (the first waiting message's wins), the trace the
    next turn continues (finishTurn)
  ARGV[17] the generation the caller expects the task at ('' = any; docs/task-generations.md): checked
    after the duplicate check (a re-sent message stays idempotent), before anything else changes
  ARGV[18] the history length the sender waits to be answered with ('' = none; -1 = all): a blocking
    SendMessage that watches the task since before this call. On RESUMED it is kept as 'answerHistory',
    so the turn's final event carries the task to it as it does to a new task's (finishTurn)
  Returns {'NOT_FOUND'} | {'REFUSED'} (see ARGV[9]) | {'CONTEXT_MISMATCH'} | {'DUPLICATE', turn} | {'TERMINAL', state}
        | {'CONFLICT'} (the messageId was taken before with other content; nothing changed)
        | {'GENERATION_MISMATCH', current generation} (ARGV[17] is not the task's generation; nothing changed)
        | {'BUSY', state} (policy reject: a turn is queued or running; nothing changed)
        | {'INBOX_FULL', count} (that many messages already wait for the running turn; nothing changed)
        | {'JOINED', turn} (policy interrupt, the turn has not started: the message joins its input)
        | {'INTERRUPTING', turn} (policy interrupt: the running turn is asked to stop; the message
          is the next turn's input, which starts as soon as it stops)
        | {'FORWARDED', child task id} (a coordinator asked on behalf of an assignment: the caller
          forwards the message to that child; the coordinator's turn stays parked)
        | {'RESUMED', turn, event id} (no turn ran: the message starts the next one; the caller enqueues it.
          The id is the SUBMITTED status update's: every event of the new turn comes after it)
        | {'QUEUED', turn}  (a turn is running or queued: the message is the next turn's input)
  Emits on RESUMED: a TASK_STATE_SUBMITTED status update. On INTERRUPTING (the first interrupt of a
  turn): a status update with metadata.cancellation {stage "requested", scope "turn", turn}.
  @bounds-events KEYS[5]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include terminal
  @include appendEvent
]]
local owner = redis.call('HGET', KEYS[1], 'owner')
if (not owner) or owner ~= ARGV[1] then return {'NOT_FOUND'} end
local contextId = redis.call('HGET', KEYS[1], 'contextId')
if ARGV[2] ~= '' and ARGV[2] ~= contextId then return {'CONTEXT_MISMATCH'} end

-- The task's new status, stored and announced as one status update (indexed afterwards).
local function announce(state, status)
  redis.call('HSET', KEYS[1], 'status', status, 'state', state, 'updatedAtMs', ARGV[5])
  local event = '{"statusUpdate":{"taskId":' .. cjson.encode(ARGV[8]) .. ',"contextId":' .. cjson.encode(contextId)
    .. ',"status":' .. status .. '}}'
  return __appendEvent(KEYS[1], KEYS[5], ARGV[7], event)
end

-- The message is the task's from now on: its id (re-sends are duplicates), its digest, and what
-- the request that sent it carried for the adapter (ctx.caller.scopes, ctx.extensions).
-- A taken message changes the task even when nothing is announced (it waits in the inbox, or
-- joins the turn's input): the generation moves, so a second sender expecting the same one is refused.
local function take()
  redis.call('SADD', KEYS[4], ARGV[4])
  redis.call('HINCRBY', KEYS[1], 'generation', 1)
  redis.call('HSET', KEYS[1], 'callerScopes', ARGV[12], 'callerExtensions', ARGV[15])
  if ARGV[14] ~= '' then redis.call('HSET', KEYS[1], 'digest:' .. ARGV[4], ARGV[14]) end
end

if redis.call('SISMEMBER', KEYS[4], ARGV[4]) == 1 then
  -- A task created before digests were kept has none for its messages: taken as the same.
  local taken = redis.call('HGET', KEYS[1], 'digest:' .. ARGV[4])
  if taken and ARGV[14] ~= '' and taken ~= ARGV[14] then return {'CONFLICT'} end
  return {'DUPLICATE', redis.call('HGET', KEYS[1], 'turn')}
end
if ARGV[17] ~= '' then
  local current = redis.call('HGET', KEYS[1], 'generation') or '0'
  if current ~= ARGV[17] then return {'GENERATION_MISMATCH', current} end
end
local state = redis.call('HGET', KEYS[1], 'state')
if __isTerminal(state) then
  return {'TERMINAL', state}
end
if ARGV[9] == '1' then return {'REFUSED'} end
local awaiting = redis.call('HGET', KEYS[1], 'awaitingChild')
if awaiting and state == 'TASK_STATE_INPUT_REQUIRED' then
  take()
  redis.call('RPUSH', KEYS[2], ARGV[3])
  redis.call('HDEL', KEYS[1], 'awaitingChild')
  local record = cjson.decode(redis.call('HGET', KEYS[7], awaiting))
  record.state = 'running'
  record.question = nil
  redis.call('HSET', KEYS[7], awaiting, cjson.encode(record))
  local message = {messageId = ARGV[4] .. ':forwarded', role = 'ROLE_AGENT', taskId = ARGV[8], contextId = contextId,
    parts = {{text = 'Forwarded your answer to assignment ' .. record.index .. ' (' .. record.role .. ').'}}}
  announce('TASK_STATE_WORKING', cjson.encode({state = 'TASK_STATE_WORKING', timestamp = ARGV[6], message = message}))
  return {'FORWARDED', awaiting}
end
local resumes = state == 'TASK_STATE_INPUT_REQUIRED' or state == 'TASK_STATE_AUTH_REQUIRED'
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
  if ARGV[16] ~= '' then redis.call('HSETNX', KEYS[1], 'inboxTrace', ARGV[16]) end
  if redis.call('HGET', KEYS[1], 'interruptTurn') ~= turn then
    redis.call('HSET', KEYS[1], 'interruptTurn', turn, 'interruptRequestedAtMs', ARGV[5])
    local requested = '{"statusUpdate":{"taskId":' .. cjson.encode(ARGV[8]) .. ',"contextId":' .. cjson.encode(contextId)
      .. ',"status":' .. redis.call('HGET', KEYS[1], 'status')
      .. ',"metadata":{"cancellation":{"stage":"requested","scope":"turn","turn":' .. turn .. ',"reason":"interrupted by a new message","at":'
      .. cjson.encode(ARGV[6]) .. '}}}}'
    local id = __appendEvent(KEYS[1], KEYS[5], ARGV[7], requested)
  end
  redis.call('PUBLISH', ARGV[11], ARGV[8] .. ' ' .. turn)
  return {'INTERRUPTING', turn}
end
take()
if resumes then
  local start = redis.call('LLEN', KEYS[2])
  redis.call('RPUSH', KEYS[2], ARGV[3])
  local turn = redis.call('HINCRBY', KEYS[1], 'turn', 1)
  redis.call('HSET', KEYS[1], 'turnInputStart', start, 'turnAttempts', 0, 'turnHandBacks', 0, 'turnBudgetSpent', 0)
  redis.call('HSET', KEYS[6], turn, cjson.encode({turn = turn, acceptedAtMs = tonumber(ARGV[5]), inputMessageIds = {ARGV[4]}}))
  if ARGV[18] ~= '' then redis.call('HSET', KEYS[1], 'answerHistory', ARGV[18]) end
  local id = announce('TASK_STATE_SUBMITTED', '{"state":"TASK_STATE_SUBMITTED","timestamp":' .. cjson.encode(ARGV[6]) .. '}')
  return {'RESUMED', turn, id}
end
redis.call('RPUSH', KEYS[3], ARGV[3])
if ARGV[16] ~= '' then redis.call('HSETNX', KEYS[1], 'inboxTrace', ARGV[16]) end
return {'QUEUED', redis.call('HGET', KEYS[1], 'turn')}
