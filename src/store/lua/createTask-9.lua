--[[
  Create a task and its first turn, unless (owner, messageId) already created one.
  KEYS[1] task hash            KEYS[2] history list      KEYS[3] events stream
  KEYS[4] messageIds set       KEYS[5] turns hash        KEYS[6] owner task index (zset)
  KEYS[7] owner context index  KEYS[8] idempotency key   KEYS[9] owner's active tasks (zset)
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
  Returns {'DUPLICATE', existingTaskId} | {'TOO_MANY_ACTIVE', count}
        | {'CREATED', eventId, the owner's tasks queued or running now (this one included): its turn's queue priority}
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
local id = redis.call('XADD', KEYS[3], '*', 'r', ARGV[9])
redis.call('PUBLISH', ARGV[12], id .. '\n' .. ARGV[9])
return {'CREATED', id, redis.call('ZCARD', KEYS[9])}
