--[[
  The body of acceptMessage-10.lua as a function, for that script and for acceptClaimedMessage-11.lua
  (the owner's claim and the accept in one call, on a single Redis). Its parameters are named KEYS
  and ARGV so the body reads them exactly as acceptMessage-10.lua's header lists them; each caller
  passes its own. Needs terminal, fieldWrites, appendEvent, storedArtifacts and takeLease before it.
  `found`: the task hash's fields __ACCEPT_READS names, as HMGET gives them, when the caller has
  read them already in this call (and written none of them since); nil: read here.
]]
local __ACCEPT_READS = { 'owner', 'contextId', 'state', 'awaitingChild', 'generation' }
local function __acceptMessage(KEYS, ARGV, found)
  found = found or redis.call('HMGET', KEYS[1], unpack(__ACCEPT_READS))
  local owner = found[1]
  if (not owner) or owner ~= ARGV[1] then return {'NOT_FOUND'} end
  local contextId = found[2]
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
    local current = found[5] or '0'
    if current ~= ARGV[17] then return {'GENERATION_MISMATCH', current} end
  end
  local state = found[3]
  if __isTerminal(state) then
    return {'TERMINAL', state}
  end
  if ARGV[9] == '1' then return {'REFUSED'} end
  local awaiting = found[4]
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
    local reply = {'RESUMED', turn, id, contextId}
    if ARGV[19] == '' then return reply end
    -- The turn starts where the message was accepted: its lease is taken here, as a worker's
    -- acquireLease would take it, one round trip before the run would.
    local lease = __takeLease(
      { task = KEYS[1], lease = KEYS[9], history = KEYS[2], events = KEYS[5], turns = KEYS[6], chunks = KEYS[10] },
      { workerId = ARGV[19], ttlMs = ARGV[20], nowMs = ARGV[5], nowIso = ARGV[6], channel = ARGV[7], deadlineMs = ARGV[21],
        maxAttempts = ARGV[22], inlineBytes = ARGV[23], withoutJob = '1' })
    for _, value in ipairs(lease) do table.insert(reply, value) end
    return reply
  end
  redis.call('RPUSH', KEYS[3], ARGV[3])
  if ARGV[16] ~= '' then redis.call('HSETNX', KEYS[1], 'inboxTrace', ARGV[16]) end
  return {'QUEUED', redis.call('HGET', KEYS[1], 'turn')}
end
