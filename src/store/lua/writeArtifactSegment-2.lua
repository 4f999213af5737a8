--[[
  Write one segment of the next generation of a task's artifacts snapshot, fenced by the lease
  generation: a compaction too large for one call (src/store/artifact-segments.ts) writes its
  segments one call each beside the live snapshot, which readers keep reading (with the pending
  chunks) until switchArtifactSegments makes the new generation live.
  KEYS[1] task hash   KEYS[2] pending artifact chunks (see appendEvents)
  ARGV[1] lease generation   ARGV[2] the draft's generation (ignored for segment 0)   ARGV[3] segment index (0 first)
  ARGV[4] the segment: a slice of the snapshot's JSON of at most SEGMENT_BYTES, cut between characters
  Segment 0 starts a draft under a new generation number (a draft left by a crash or a lost lease
  goes) and notes the chunks pending now: the caller's artifacts include them, so the switch drops
  them. A segment already written (a call re-sent) is not written again.
  Returns {'STALE'} when a newer lease generation holds the task, {'GONE'} when the draft is no longer
  this generation's (another compaction replaced it), {'GAP'} when an earlier segment is missing,
  else {'OK', draft generation}.
  @include fence
  @include storedArtifacts
]]
if __leaseIsStale() then return {'STALE'} end
local index = tonumber(ARGV[3])
local segment = ARGV[4]
if index == 0 then
  __dropDraft(KEYS[1])
  local generation = redis.call('HINCRBY', KEYS[1], 'artifactsGenSeq', 1)
  local chunkBytes = redis.call('HGET', KEYS[1], 'artifactChunkBytes') or '0'
  redis.call('HSET', KEYS[1], 'artseg:' .. generation .. ':0', segment,
    'artifactsDraft', generation .. ' 1 ' .. #segment .. ' ' .. redis.call('LLEN', KEYS[2]) .. ' ' .. chunkBytes)
  return {'OK', generation}
end
local draft = redis.call('HGET', KEYS[1], 'artifactsDraft')
if not draft then return {'GONE'} end
local generation, count, bytes, chunks, chunkBytes = string.match(draft, '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
if generation ~= ARGV[2] then return {'GONE'} end
count = tonumber(count)
if index < count then return {'OK', generation} end
if index > count then return {'GAP'} end
redis.call('HSET', KEYS[1], 'artseg:' .. generation .. ':' .. index, segment,
  'artifactsDraft', generation .. ' ' .. (count + 1) .. ' ' .. (tonumber(bytes) + #segment) .. ' ' .. chunks .. ' ' .. chunkBytes)
return {'OK', generation}
