--[[
  Make a compaction's draft (writeArtifactSegment) the task's live artifacts snapshot, fenced by
  the lease generation, in one small step: the old snapshot (the 'artifacts' field or the live
  generation's segments) goes, and so do the pending chunks the draft folded in (the oldest ones,
  by count: chunks stored after the draft began stay pending).
  KEYS[1] task hash   KEYS[2] pending artifact chunks (see appendEvents)
  ARGV[1] lease generation   ARGV[2] the draft's generation   ARGV[3] its segments   ARGV[4] their bytes
  Returns {'STALE'} when a newer lease generation holds the task, {'INCOMPLETE'} when the draft is
  not this generation's or does not hold exactly these segments (nothing changed), else {'OK'}.
  @include fence
  @include storedArtifacts
]]
if __leaseIsStale() then return {'STALE'} end
local draft = redis.call('HGET', KEYS[1], 'artifactsDraft')
if not draft then return {'INCOMPLETE'} end
local generation, count, bytes, chunks, chunkBytes = string.match(draft, '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
if generation ~= ARGV[2] or count ~= ARGV[3] or bytes ~= ARGV[4] then return {'INCOMPLETE'} end
local live = redis.call('HMGET', KEYS[1], 'artifactsGen', 'artifactsSegments')
if live[1] then __dropSegmentsOf(KEYS[1], live[1], tonumber(live[2] or '0')) end
redis.call('HDEL', KEYS[1], 'artifacts', 'artifactsDraft')
redis.call('HSET', KEYS[1], 'artifactsGen', generation, 'artifactsSegments', count, 'artifactsSegmentBytes', bytes)
if tonumber(chunks) > 0 then redis.call('LTRIM', KEYS[2], tonumber(chunks), -1) end
-- (A decrement of 0 would be sent as '-0', which HINCRBY refuses.)
local left = tonumber(redis.call('HGET', KEYS[1], 'artifactChunkBytes') or '0') - tonumber(chunkBytes)
if left <= 0 or redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('HDEL', KEYS[1], 'artifactChunkBytes')
else
  redis.call('HSET', KEYS[1], 'artifactChunkBytes', left)
end
return {'OK'}
