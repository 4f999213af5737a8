--[[
  Read one task for its owner, with the id of the last event it includes, atomically: a
  subscriber that starts from this snapshot continues with exactly the events after that id.
  KEYS[1] task hash   KEYS[2] history   KEYS[3] events   KEYS[4] pending artifact chunks (see appendEvents)
  ARGV[1] ownerKey   ARGV[2] history length (-1 = all, 0 = none)
  Returns {} when missing or foreign, else {id, contextId, status, artifacts (include/storedArtifacts.lua), metadata, lastEventId,
    cancelRequestedAtMs, cancelAcknowledgedAtMs, cancelStoppedAtMs, cancelOutcome, outcome,
    usageInputTokens, usageOutputTokens, directReply, eventsTrimmedThrough, eventsTrimmed, history...}
  eventsTrimmedThrough and eventsTrimmed say what the replay bound dropped (boundReplay.lua): with
  lastEventId they tell, atomically with the snapshot, whether a Last-Event-ID is older than the buffer.
  @include storedArtifacts
  @include taskSnapshot
]]
return __taskSnapshot(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2])) or {}
