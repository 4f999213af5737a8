--[[
  Read one task for its owner, with the id of the last event it includes, atomically: a
  subscriber that starts from this snapshot continues with exactly the events after that id.
  KEYS[1] task hash   KEYS[2] history   KEYS[3] events   KEYS[4] pending artifact chunks (see appendEvents)
  ARGV[1] ownerKey   ARGV[2] history length (-1 = all, 0 = none)
  ARGV[3] the most artifact bytes the reader pays for after the read (0 = no bound): a task whose stored
    artifacts (the snapshot's length or its segments' bytes, and the task hash's 'artifactChunkBytes', all O(1)) weigh more
    is not assembled: the reply is {'LARGE', bytes}, and the reader pays for them first (src/tasks/read-tasks.ts)
  Returns {} when missing or foreign, {'LARGE', bytes} (above), else {id, contextId, status, artifacts (include/storedArtifacts.lua), metadata, lastEventId,
    cancelRequestedAtMs, cancelAcknowledgedAtMs, cancelStoppedAtMs, cancelOutcome, outcome,
    usageInputTokens, usageOutputTokens, directReply, eventsTrimmedThrough, eventsTrimmed, generation, history...}
  eventsTrimmedThrough and eventsTrimmed say what the replay bound dropped (boundReplay.lua): with
  lastEventId they tell, atomically with the snapshot, whether a Last-Event-ID is older than the buffer.
  @include storedArtifacts
  @include taskSnapshot
]]
local payAfterBytes = tonumber(ARGV[3] or '0') or 0
if payAfterBytes > 0 then
  local owner = redis.call('HGET', KEYS[1], 'owner')
  if (not owner) or owner ~= ARGV[1] then return {} end
  local bytes = __artifactsWeight(KEYS[1])
  if bytes > payAfterBytes then return {'LARGE', bytes} end
end
return __taskSnapshot(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2])) or {}
