--[[
  Output bounds of a turn (`@include outputBound`, src/limits/output-limits.ts): counts the bytes
  of the events a call stores against the task's per-turn and per-task totals and, for an
  artifact chunk, the artifact's total (a replacing chunk starts it afresh), all in the task hash
  (taskKey: outputTurn, turnOutputBytes, taskOutputBytes, artifactBytes:<artifactId>).
  __takeOutputBounds() pops the five arguments the caller put last in ARGV: artifact id ('' = not
  an artifact chunk), '1' when the chunk appends, then the three bounds (0 = none).
  __chargeOutput(taskKey, bytes) returns nil and counts the bytes, or {'LIMIT', setting, bound, would-be
  total} and counts nothing: the caller then stores nothing either.
]]
local __outputBounds
local function __takeOutputBounds()
  local maxTask = tonumber(table.remove(ARGV))
  local maxTurn = tonumber(table.remove(ARGV))
  local maxArtifact = tonumber(table.remove(ARGV))
  local append = table.remove(ARGV) == '1'
  local artifactId = table.remove(ARGV)
  __outputBounds = { artifactId = artifactId, append = append, maxArtifact = maxArtifact, maxTurn = maxTurn, maxTask = maxTask }
end
local function __chargeOutput(taskKey, bytes)
  local b = __outputBounds
  local counts = redis.call('HMGET', taskKey, 'turn', 'outputTurn', 'turnOutputBytes', 'taskOutputBytes')
  local turn = counts[1] or ''
  local turnBytes = 0
  if counts[2] == turn then turnBytes = tonumber(counts[3] or '0') end
  local taskBytes = tonumber(counts[4] or '0')
  local artifactField = 'artifactBytes:' .. b.artifactId
  local artifactBytes = 0
  if b.artifactId ~= '' then
    if b.append then artifactBytes = tonumber(redis.call('HGET', taskKey, artifactField) or '0') end
    if b.maxArtifact > 0 and artifactBytes + bytes > b.maxArtifact then
      return {'LIMIT', 'limits.maxArtifactBytes', b.maxArtifact, artifactBytes + bytes}
    end
  end
  if b.maxTurn > 0 and turnBytes + bytes > b.maxTurn then return {'LIMIT', 'limits.maxTurnOutputBytes', b.maxTurn, turnBytes + bytes} end
  if b.maxTask > 0 and taskBytes + bytes > b.maxTask then return {'LIMIT', 'limits.maxTaskOutputBytes', b.maxTask, taskBytes + bytes} end
  if b.artifactId ~= '' then
    redis.call('HSET', taskKey, 'outputTurn', turn, 'turnOutputBytes', turnBytes + bytes, 'taskOutputBytes', taskBytes + bytes,
      artifactField, artifactBytes + bytes)
  else
    redis.call('HSET', taskKey, 'outputTurn', turn, 'turnOutputBytes', turnBytes + bytes, 'taskOutputBytes', taskBytes + bytes)
  end
  return nil
end
