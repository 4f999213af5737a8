--[[
  Store and announce events of a running turn, fenced by the lease generation, and at most once
  per turn run: an event the adapter emits carries its place in the run (the emit scope — turn
  and resumption — and its sequence number) and a digest of its content. A re-run of the turn
  (after a lost worker, a lost lease, a second wake) that emits the same content at the same
  place is recognized and appends nothing. The first event of a run that differs ends the shared
  prefix: from then on the run appends everything it emits (forced), and the digests of the
  earlier run past that point are dropped, so the next re-run compares against this run.
  KEYS[1] task hash   KEYS[2] events   (the owner's indexes follow, src/store/owner-index.ts)
  KEYS[3] emitted digests (hash: "scope" → emit scope, "high" → highest sequence, "<seq>" → digest)
  KEYS[4] pending artifact chunks (list of {"append", "artifact"} JSON, oldest first)
  ARGV[1] lease generation   ARGV[2] event channel   ARGV[3] now (ms)   ARGV[4] taskId
  ARGV[5] the whole artifacts JSON, a compaction of at most one segment ('' = unchanged): it replaces the snapshot and the
    pending chunks go (a larger snapshot is written in segments after the chunk, include/storedArtifacts.lua)
  ARGV[6] one pending artifact chunk JSON ('' = none): pushed to KEYS[4] (its length added to the task hash's
    'artifactChunkBytes', which a compaction clears: what readTask weighs a task by), the snapshot is not touched
    (re-writing the whole snapshot per chunk would cost traffic quadratic in the turn's output;
    the worker compacts geometrically, src/runtime/artifact-compaction.ts, and readers merge, src/store/stored-artifacts.ts)
  ARGV[7] status JSON ('' = unchanged)   ARGV[8] state ('' = unchanged)
  ARGV[9] emit scope ('' = not an adapter's event: always appended)   ARGV[10] sequence   ARGV[11] content digest
  ARGV[12] '1' when this run already appended an event (its re-run prefix is over)
  ARGV[13..] StreamResponse JSON of each event, in order
  then, last, the output bounds (include/outputBound.lua: artifact id, append flag, three bounds)
  Returns {'STALE'} when a newer generation holds the task, {'REPEATED'} when an earlier run of
  this turn already appended this event (nothing changed), {'LIMIT', setting, bound, would-be
  bytes} when the events would take the turn's output past a bound (nothing stored), else {'OK', lastEventId}.
  @once: a call re-sent after a lost connection returns the first reply (src/store/scripts.ts).
  @bounds-events KEYS[2]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include fence
  @include appendEvent
  @include outputBound
  @include storedArtifacts
]]
__takeOutputBounds()
if __leaseIsStale() then return {'STALE'} end
local scope = ARGV[9]
local seq = tonumber(ARGV[10])
-- The run's digests as they stand, in one read: its scope, the highest sequence, this place's.
local digests = scope ~= '' and redis.call('HMGET', KEYS[3], 'scope', 'high', ARGV[10]) or {}
local sameScope = scope ~= '' and digests[1] == scope
local diverged = false
if sameScope and ARGV[12] ~= '1' then
  local earlier = digests[3]
  if earlier == ARGV[11] then return {'REPEATED'} end
  diverged = earlier ~= false
end
local outputBytes = 0
for i = 13, #ARGV do outputBytes = outputBytes + #ARGV[i] end
local refused = __chargeOutput(KEYS[1], outputBytes)
if refused then return refused end
-- Recorded only for an event that is stored: the digest at a place says the event there was
-- stored (a turn's final write checks it, finishTurn's ARGV[18]).
if scope ~= '' then
  local high = tonumber(digests[2] or '0')
  if not sameScope then
    -- Digests of another turn or resumption say nothing about this run.
    if digests[1] or digests[2] then redis.call('DEL', KEYS[3]) end
    high = 0
  elseif diverged then
    -- The re-run diverges here: what the earlier run emitted after this point is no guide.
    for later = seq + 1, high do redis.call('HDEL', KEYS[3], tostring(later)) end
  end
  if seq > high then
    -- ARGV[10] is seq as text: Redis would turn the number into text with snprintf.
    redis.call('HSET', KEYS[3], 'scope', scope, ARGV[10], ARGV[11], 'high', ARGV[10])
  else
    redis.call('HSET', KEYS[3], 'scope', scope, ARGV[10], ARGV[11])
  end
end
if ARGV[5] ~= '' then
  __dropSegments(KEYS[1])
  redis.call('HSET', KEYS[1], 'artifacts', ARGV[5])
  redis.call('DEL', KEYS[4])
  redis.call('HDEL', KEYS[1], 'artifactChunkBytes')
end
if ARGV[6] ~= '' then
  redis.call('RPUSH', KEYS[4], ARGV[6])
  redis.call('HINCRBY', KEYS[1], 'artifactChunkBytes', #ARGV[6])
end
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'status', ARGV[7], 'state', ARGV[8], 'updatedAtMs', ARGV[3])
end
local id = ''
for i = 13, #ARGV do
  id = __appendEvent(KEYS[1], KEYS[2], ARGV[2], ARGV[i])
end
return {'OK', id}
