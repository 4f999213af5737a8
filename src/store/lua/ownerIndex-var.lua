--[[
  Step 3 of a task's write, in the owner's slot: moves the owner's index entries of the tasks
  that changed forward (ZADD GT: scores never go back, so notes may arrive late and out of order)
  and drops active-set entries of tasks that no longer have a turn queued or running. Called
  with any number of keys (src/store/owner-index.ts batches a process's notes per owner).
  An active entry is dropped only when its score (when the task became active) is not newer
  than the drop's: a task resumed since keeps its entry.
  KEYS[1] owner task index   KEYS[2] owner's active tasks   KEYS[3..] owner context indexes
  ARGV[1] n, the index entries that follow: n × (taskId, score ms, which KEYS holds its context index)
  then pairs (taskId, newest active score to drop)
  Returns {entries indexed, active entries dropped}
]]
local n = tonumber(ARGV[1])
for i = 0, n - 1 do
  local taskId, score, context = ARGV[2 + i * 3], ARGV[3 + i * 3], tonumber(ARGV[4 + i * 3])
  redis.call('ZADD', KEYS[1], 'GT', score, taskId)
  redis.call('ZADD', KEYS[context], 'GT', score, taskId)
end
local dropped = 0
for i = 2 + n * 3, #ARGV, 2 do
  local score = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if score and tonumber(score) <= tonumber(ARGV[i + 1]) then
    redis.call('ZREM', KEYS[2], ARGV[i])
    dropped = dropped + 1
  end
end
return {n, dropped}
