--[[
  Create a task and its first turn, unless (owner, messageId) already created one.
  KEYS[1] task hash            KEYS[2] history list      KEYS[3] events stream
  KEYS[4] messageIds set       KEYS[5] turns hash        KEYS[6] owner task index (zset)
  KEYS[7] owner context index  KEYS[8] idempotency key   KEYS[9] owner's active tasks (zset)
  KEYS[10] owner's storage quota (hash)   KEYS[11] owner's quota checks (zset task id → when to look whether it expired)
  Context ids are per owner: another owner's context id names a context of the caller's own.
  ARGV[1] taskId   ARGV[2] ownerKey   ARGV[3] tenant   ARGV[4] contextId
  ARGV[5] status JSON   ARGV[6] message JSON   ARGV[7] messageId   ARGV[8] now (ms)
  ARGV[9] task event JSON (StreamResponse {task})   ARGV[10] turn record JSON
  ARGV[11] idempotency TTL (s)   ARGV[12] event channel   ARGV[13] metadata JSON
  ARGV[14] versions JSON (gateway, adapter, card the task started under)
  ARGV[15] most active tasks the owner may have (0 = no cap)
  ARGV[16] a sub-agent's links JSON {parentTaskId, role, readOnly} ('' = a top-level task)
  ARGV[17] the scopes the caller's credentials granted, JSON array (what ctx.caller shows the adapter)
  ARGV[18] digest of the message's content as sent (a re-send with the same messageId is compared with it)
  ARGV[19] the extensions the request activated, JSON array (what ctx.extensions shows the adapter)
  ARGV[20] bytes the task's storage charges to its owner (0 = not charged: quotas off, or a sub-agent's task)
  ARGV[21] most bytes the owner may have stored (0 = no quota)   ARGV[22] most tasks the owner may have stored (0 = no quota)
  ARGV[23] when to first look whether the charged task still exists (ms)
  ARGV[24] the task event as the replay buffer keeps it (src/store/creation-event.ts: without the
           first message, which the history holds; '' = ARGV[9] as it is); ARGV[9] is what is published
  Returns {'DUPLICATE', existingTaskId} | {'TOO_MANY_ACTIVE', count}
        | {'OVER_QUOTA', 'bytes' | 'tasks', stored, the earliest quota check (ms, '' if none)} (nothing changed)
        | {'CREATED', eventId, the owner's tasks queued or running now (this one included): its turn's queue priority,
           the owner's quota checks that are due (a sweep may release expired tasks)}
  Emits: XADD + PUBLISH of the task snapshot event.
  @bounds-events KEYS[3]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
]]
local existing = redis.call('GET', KEYS[8])
if existing then return {'DUPLICATE', existing} end
-- Task ids are the server's: one that exists already (a sub-agent's derived id) is never overwritten.
if redis.call('EXISTS', KEYS[1]) == 1 then return {'DUPLICATE', ARGV[1]} end
local cap = tonumber(ARGV[15])
if cap > 0 then
  local active = redis.call('ZCARD', KEYS[9])
  if active >= cap then return {'TOO_MANY_ACTIVE', active} end
end
local charge = tonumber(ARGV[20])
if charge > 0 then
  local maxBytes, maxTasks = tonumber(ARGV[21]), tonumber(ARGV[22])
  local storedBytes = tonumber(redis.call('HGET', KEYS[10], 'bytes') or '0')
  local storedTasks = tonumber(redis.call('HGET', KEYS[10], 'tasks') or '0')
  local function earliest()
    local first = redis.call('ZRANGE', KEYS[11], 0, 0, 'WITHSCORES')
    return first[2] or ''
  end
  if maxTasks > 0 and storedTasks + 1 > maxTasks then return {'OVER_QUOTA', 'tasks', storedTasks, earliest()} end
  if maxBytes > 0 and storedBytes + charge > maxBytes then return {'OVER_QUOTA', 'bytes', storedBytes, earliest()} end
  redis.call('HINCRBY', KEYS[10], 'bytes', charge)
  redis.call('HINCRBY', KEYS[10], 'tasks', 1)
  redis.call('HSET', KEYS[10], 't:' .. ARGV[1], charge)
  redis.call('ZADD', KEYS[11], ARGV[23], ARGV[1])
end

redis.call('HSET', KEYS[1],
  'id', ARGV[1], 'owner', ARGV[2], 'tenant', ARGV[3], 'contextId', ARGV[4],
  'status', ARGV[5], 'state', 'TASK_STATE_SUBMITTED', 'artifacts', '[]', 'metadata', ARGV[13],
  'turn', 1, 'turnInputStart', 0, 'turnAttempts', 0, 'leaseGeneration', 0,
  'createdAtMs', ARGV[8], 'updatedAtMs', ARGV[8], 'versions', ARGV[14], 'callerScopes', ARGV[17],
  'callerExtensions', ARGV[19])
if ARGV[18] ~= '' then redis.call('HSET', KEYS[1], 'digest:' .. ARGV[7], ARGV[18]) end
if ARGV[16] ~= '' then
  local links = cjson.decode(ARGV[16])
  redis.call('HSET', KEYS[1], 'parentTaskId', links.parentTaskId, 'role', links.role, 'readOnly', links.readOnly)
end
redis.call('RPUSH', KEYS[2], ARGV[6])
redis.call('SADD', KEYS[4], ARGV[7])
redis.call('HSET', KEYS[5], 1, ARGV[10])
redis.call('ZADD', KEYS[6], ARGV[8], ARGV[1])
redis.call('ZADD', KEYS[7], ARGV[8], ARGV[1])
redis.call('ZADD', KEYS[9], ARGV[8], ARGV[1])
redis.call('SET', KEYS[8], ARGV[1], 'EX', ARGV[11])
local stored = ARGV[24]
if stored == nil or stored == '' then stored = ARGV[9] end
local id = redis.call('XADD', KEYS[3], '*', 'r', stored)
redis.call('PUBLISH', ARGV[12], id .. '\n' .. ARGV[9])
local due = 0
if charge > 0 then due = redis.call('ZCOUNT', KEYS[11], '-inf', ARGV[8]) end
return {'CREATED', id, redis.call('ZCARD', KEYS[9]), due}
