--[[
  Step 1 of creating a task, in the owner's slot ({o:<ownerKey>}, docs/redis-slots.md): claims
  the message's idempotency key for the task id, an active-task slot and the storage quota, and
  indexes the task. createTask (step 2, the task's own slot) follows; a crash between the two
  leaves a claim that a re-sent message finds (CLAIMED_BEFORE) and completes with the same id.
  Index entries are hints: ListTasks re-checks each task, and drops one whose task is gone.
  KEYS[1] idempotency key   KEYS[2] owner's active tasks (zset)   KEYS[3] owner's storage quota (hash)
  KEYS[4] owner's quota checks (zset)   KEYS[5] owner task index   KEYS[6] owner context index
  KEYS[7] owner's stored-bytes bucket (limits.storedBytesPerSecond; include/tokenBucket.lua)
  ARGV[1] taskId   ARGV[2] now (ms)   ARGV[3] idempotency TTL (s)   ARGV[4] most active tasks (0 = no cap)
  ARGV[5] bytes the task charges (0 = not charged)   ARGV[6] most bytes stored (0 = no quota)
  ARGV[7] most tasks stored (0 = no quota)   ARGV[8] when to first look whether the task still exists (ms)
  ARGV[9] the stored-bytes rate (bytes per second; 0 = not taken here)   ARGV[10] its burst
  ARGV[11] the bytes the message stores (a cost over the burst costs the whole bucket)
  The message's bytes are taken from the bucket when the task is claimed, in this call (one round
  trip less than a take of their own), and only then: a re-sent message, a refusal, or a claim
  retried after a quota sweep is never charged twice.
  Returns {'CLAIMED_BEFORE', taskId} (the key was claimed before: that task is the message's)
        | {'BYTE_RATE', ms until the bucket holds the bytes} | {'TOO_MANY_ACTIVE', count}
        | {'OVER_QUOTA', 'bytes' | 'tasks', stored, earliest check (ms) | ''} (nothing changed)
        | {'CLAIMED', the owner's tasks queued or running now (this one included), quota checks due}
  @include ownerQuota
  @include tokenBucket
]]
local existing = redis.call('GET', KEYS[1])
if existing then return {'CLAIMED_BEFORE', existing} end
local rate = tonumber(ARGV[9])
local bucketNow, bucketTokens, storedCost
if rate > 0 then
  local burst = tonumber(ARGV[10])
  storedCost = math.min(burst, tonumber(ARGV[11]))
  bucketNow = __bucketNow()
  bucketTokens = __bucketTokens(KEYS[7], rate, burst, bucketNow)
  if bucketTokens < storedCost then return {'BYTE_RATE', __bucketWaitMs(bucketTokens, storedCost, rate)} end
end
local cap = tonumber(ARGV[4])
if cap > 0 and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  local active = redis.call('ZCARD', KEYS[2])
  if active >= cap then return {'TOO_MANY_ACTIVE', active} end
end
local charge = tonumber(ARGV[5])
-- A task charged before (a sub-agent's derived id, claimed again once its key expired) is not charged twice.
if charge > 0 and redis.call('HEXISTS', KEYS[3], 't:' .. ARGV[1]) == 0 then
  local refusal = __quotaRefusal(KEYS[3], KEYS[4], charge, tonumber(ARGV[6]), tonumber(ARGV[7]), true)
  if refusal then return refusal end
  __quotaCharge(KEYS[3], KEYS[4], ARGV[1], charge, ARGV[8])
end
if rate > 0 then __bucketStore(KEYS[7], bucketTokens - storedCost, rate, tonumber(ARGV[10]), bucketNow) end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[5], 'GT', ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[6], 'GT', ARGV[2], ARGV[1])
local due = 0
if charge > 0 then due = redis.call('ZCOUNT', KEYS[4], '-inf', ARGV[2]) end
return {'CLAIMED', redis.call('ZCARD', KEYS[2]), due}
