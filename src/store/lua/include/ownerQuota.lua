--[[
  An owner's storage quota (limits.maxStoredBytes, maxStoredTasks), in the owner's slot: the
  hash at quotaKey holds `bytes`, `tasks` and `t:<taskId>` → bytes that task charged; the zset at
  checksKey holds each charged task → when to look whether it expired (quotaRelease).
  Included by claimTask and claimTurn (src/store/scripts.ts, `@include ownerQuota`).
]]
-- The refusal when `charge` more bytes (and one more task when addsTask) would pass a bound, else nil.
local function __quotaRefusal(quotaKey, checksKey, charge, maxBytes, maxTasks, addsTask)
  local storedBytes = tonumber(redis.call('HGET', quotaKey, 'bytes') or '0')
  local storedTasks = tonumber(redis.call('HGET', quotaKey, 'tasks') or '0')
  local function earliest()
    local first = redis.call('ZRANGE', checksKey, 0, 0, 'WITHSCORES')
    return first[2] or ''
  end
  if addsTask and maxTasks > 0 and storedTasks + 1 > maxTasks then return {'OVER_QUOTA', 'tasks', storedTasks, earliest()} end
  if maxBytes > 0 and storedBytes + charge > maxBytes then return {'OVER_QUOTA', 'bytes', storedBytes, earliest()} end
  return nil
end

-- Charges `charge` bytes to the task; its first charge also counts the task and schedules its expiry check.
local function __quotaCharge(quotaKey, checksKey, taskId, charge, checkAtMs)
  redis.call('HINCRBY', quotaKey, 'bytes', charge)
  if redis.call('HINCRBY', quotaKey, 't:' .. taskId, charge) == charge then
    redis.call('HINCRBY', quotaKey, 'tasks', 1)
    redis.call('ZADD', checksKey, 'NX', checkAtMs, taskId)
  end
end
