--[[
  The body of createTask-7.lua as a function, for that script and for createClaimedTask-14.lua (the claim
  and the create in one call, on a single Redis). Its parameters are named KEYS and ARGV so the
  body reads them exactly as createTask-7.lua's header lists them; each caller passes its own.
  KEYS[1] task hash (the keys and arguments: createTask-7.lua's header)
  Needs fieldWrites, appendEvent, storedArtifacts and takeLease before it.
  With ARGV[21] (the first turn's lease, taken at once) the lease is what __takeLease takes and
  answers, written and answered here from what this call has just written, none of it read back:
  the task is new, so its state is SUBMITTED, no lease is held, its lease generation and attempts
  become 1, its turn is 1, its artifacts are '[]' and its history is the one message. Only a
  lease reply whose artifacts would come in slices (an inline bound under the 2 bytes of '[]')
  goes through __takeLease itself.
]]
local function __createTask(KEYS, ARGV)
  if redis.call('EXISTS', KEYS[1]) == 1 then return {'EXISTS'} end
  -- The optional fields go in the one HSET too (include/fieldWrites.lua).
  local taskWrites = __fieldWrites()
  if ARGV[19] ~= '' then taskWrites.set('answerHistory', ARGV[19]) end
  if ARGV[16] ~= '' then taskWrites.set('digest:' .. ARGV[7], ARGV[16]) end
  local links = ARGV[14] ~= '' and cjson.decode(ARGV[14]) or {}
  if ARGV[14] ~= '' then
    taskWrites.set('parentTaskId', links.parentTaskId)
    taskWrites.set('role', links.role)
    taskWrites.set('readOnly', links.readOnly)
  end
  local inlineBytes = tonumber(ARGV[26]) or 0
  -- The first turn's lease, taken at once (see the header): its fields go in the create's HSET.
  local working, deadline
  if ARGV[21] ~= '' and not (inlineBytes > 0 and inlineBytes < 2) then
    working = '{"state":"TASK_STATE_WORKING","timestamp":' .. cjson.encode(ARGV[23]) .. '}'
    taskWrites.set('turnWorker', ARGV[21])
    taskWrites.set('turnLeasedAtMs', ARGV[8])
    taskWrites.set('turnWithoutJob', '1')
    taskWrites.set('turnDeadlineFor', '1')
    if tonumber(ARGV[24]) > 0 then
      -- As Redis writes the number __takeLease hands HSET, and as HMGET would read it back.
      deadline = string.format('%.17g', tonumber(ARGV[8]) + tonumber(ARGV[24]))
      taskWrites.set('turnDeadlineAtMs', deadline)
    end
  end
  redis.call('HSET', KEYS[1],
    'id', ARGV[1], 'owner', ARGV[2], 'tenant', ARGV[3], 'contextId', ARGV[4],
    'status', working or ARGV[5], 'state', working and 'TASK_STATE_WORKING' or 'TASK_STATE_SUBMITTED', 'artifacts', '[]',
    'metadata', ARGV[12], 'turn', '1', 'turnInputStart', '0', 'turnAttempts', working and '1' or '0',
    'leaseGeneration', working and '1' or '0', 'createdAtMs', ARGV[8], 'updatedAtMs', ARGV[8], 'versions', ARGV[13],
    'callerScopes', ARGV[15], 'callerExtensions', ARGV[17], unpack(taskWrites.sets))
  redis.call('RPUSH', KEYS[2], ARGV[6])
  redis.call('SADD', KEYS[4], ARGV[7])
  redis.call('HSET', KEYS[5], '1', ARGV[10])
  local stored, published = ARGV[18], ARGV[9]
  if stored == '' then stored = published end
  if published == '' then
    -- Put together here rather than sent whole: the gateway would send the message twice, and
    -- write the event it is in. Past the announcement bound subscribers get the id alone and read
    -- the event from the buffer, put together there (every gateway would receive it otherwise).
    local from = string.find(stored, ':', 1, true)
    local at = tonumber(ARGV[20])
    if #stored - from + #ARGV[6] > __ANNOUNCE_WHOLE_MAX then
      published = false
    else
      published = string.sub(stored, from + 1, at) .. ARGV[6] .. string.sub(stored, at + 1)
    end
  end
  local id = __appendEvent(KEYS[1], KEYS[3], ARGV[11], stored, published)
  if ARGV[21] == '' then return {'CREATED', id} end
  if working then
    redis.call('SET', KEYS[6], ARGV[21], 'PX', ARGV[22])
    __appendEvent(KEYS[1], KEYS[3], ARGV[11],
      '{"statusUpdate":{"taskId":' .. cjson.encode(ARGV[1]) .. ',"contextId":' .. cjson.encode(ARGV[4]) .. ',"status":' .. working .. '}}')
    -- __takeLease's reply, field for field (its header, acquireLease-6.lua's, says what each is).
    return {'CREATED', id, 'ACQUIRED', 1, '1', 1, '', working, '[]', ARGV[12], ARGV[4], '0', ARGV[10], ARGV[13],
      deadline or '', '0', '0', links.role or '', links.parentTaskId or '', links.readOnly or '', 0, '', ARGV[15], ARGV[17], ARGV[6]}
  end
  local reply = {'CREATED', id}
  local lease = __takeLease(
    { task = KEYS[1], lease = KEYS[6], history = KEYS[2], events = KEYS[3], turns = KEYS[5], chunks = KEYS[7] },
    { workerId = ARGV[21], ttlMs = ARGV[22], nowMs = ARGV[8], nowIso = ARGV[23], channel = ARGV[11], deadlineMs = ARGV[24],
      maxAttempts = ARGV[25], inlineBytes = ARGV[26], withoutJob = '1' })
  for _, value in ipairs(lease) do table.insert(reply, value) end
  return reply
end
