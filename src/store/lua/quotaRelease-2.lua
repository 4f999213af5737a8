--[[
  Releases what expired tasks had charged to their owner's storage quota, and reschedules the
  checks of tasks that still exist. One slot: the owner's ({o:<ownerKey>}); the caller looked at
  each task in its own slot first (a task's keys expire with it, so "gone" is final).
  KEYS[1] owner's storage quota (hash: bytes, tasks, t:<taskId> → bytes charged)
  KEYS[2] owner's quota checks (zset: task id → when to look again, ms)
  ARGV[1] JSON array of task ids that are gone   ARGV[2] JSON object task id → next check (ms) for tasks still there
  Returns {bytes released, tasks released}
]]
local releasedBytes, releasedTasks = 0, 0
for _, taskId in ipairs(cjson.decode(ARGV[1])) do
  local charged = redis.call('HGET', KEYS[1], 't:' .. taskId)
  if charged then
    releasedBytes = releasedBytes + tonumber(charged)
    releasedTasks = releasedTasks + 1
    redis.call('HDEL', KEYS[1], 't:' .. taskId)
  end
  redis.call('ZREM', KEYS[2], taskId)
end
if releasedTasks > 0 then
  local bytes = redis.call('HINCRBY', KEYS[1], 'bytes', -releasedBytes)
  local tasks = redis.call('HINCRBY', KEYS[1], 'tasks', -releasedTasks)
  -- Never below zero, whatever happened before (a quota hash written by an older version).
  if bytes < 0 then redis.call('HSET', KEYS[1], 'bytes', 0) end
  if tasks < 0 then redis.call('HSET', KEYS[1], 'tasks', 0) end
end
for taskId, nextCheckMs in pairs(cjson.decode(ARGV[2])) do
  redis.call('ZADD', KEYS[2], 'XX', nextCheckMs, taskId)
end
return {releasedBytes, releasedTasks}
