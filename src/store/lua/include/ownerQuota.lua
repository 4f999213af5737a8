--[[
  An owner's storage quota (limits.maxStoredBytes, maxStoredTasks), in the owner's slot: the
  hash at quotaKey holds `bytes`, `tasks` and `t:<taskId>` → bytes that task charged; the zset at
  checksKey holds each charged task → when to look whether it expired (quotaRelease).
  Included by claimTask and claimTurn (src/store/scripts.ts, `@include ownerQuota`).
]]
-- What the owner holds now and what `taskId` has charged (nil: nothing yet), in one read: the
-- refusal and the charge below work from it rather than reading and incrementing field by field.
local function __quotaHeld(quotaKey, taskId)
  local held = redis.call('HMGET', quotaKey, 'bytes', 'tasks', 't:' .. taskId)
  return { bytes = tonumber(held[1] or '0'), tasks = tonumber(held[2] or '0'), task = held[3] and tonumber(held[3]) }
end

-- The refusal when `charge` more bytes (and one more task when addsTask) would pass a bound, else nil.
local function __quotaRefusal(held, checksKey, charge, maxBytes, maxTasks, addsTask)
  local function earliest()
    local first = redis.call('ZRANGE', checksKey, 0, 0, 'WITHSCORES')
    return first[2] or ''
  end
  if addsTask and maxTasks > 0 and held.tasks + 1 > maxTasks then return {'OVER_QUOTA', 'tasks', held.tasks, earliest()} end
  if maxBytes > 0 and held.bytes + charge > maxBytes then return {'OVER_QUOTA', 'bytes', held.bytes, earliest()} end
  return nil
end

-- Charges `charge` bytes to the task (`held`: __quotaHeld's, read in this call), in one HSET; its
-- first charge also counts the task and schedules its expiry check.
local function __quotaCharge(quotaKey, checksKey, taskId, charge, checkAtMs, held)
  if held.task then
    redis.call('HSET', quotaKey, 'bytes', held.bytes + charge, 't:' .. taskId, held.task + charge)
    return
  end
  redis.call('HSET', quotaKey, 'bytes', held.bytes + charge, 't:' .. taskId, charge, 'tasks', held.tasks + 1)
  redis.call('ZADD', checksKey, 'NX', checkAtMs, taskId)
end
