--[[
  A task's artifacts as one string, for every script that reads them (`@include storedArtifacts`):
  the compacted snapshot alone while no chunk is pending, else
  {"snapshotBytes":n,"snapshot":[...],"chunks":[<entry>,...]} with the entries of the pending chunk list
  (appendEvents RPUSHes them). Only strings are joined: no JSON is decoded here; the reader merges
  them (src/store/stored-artifacts.ts).
  The snapshot is the task hash's 'artifacts' field when it fits one segment; a larger one is
  kept as segments of at most SEGMENT_BYTES (src/store/artifact-segments.ts) in the task hash's
  fields 'artseg:<generation>:<index>', the live generation named by 'artifactsGen' (with
  'artifactsSegments', 'artifactsSegmentBytes'), and 'artifacts' is then absent. A compaction
  writes the next generation's segments beside the live one, one call each (writeArtifactSegment,
  its progress in 'artifactsDraft': "<generation> <segments> <bytes> <chunks folded> <their bytes>"),
  and switches in one small call (switchArtifactSegments). Readers look at the live generation
  only, so a draft a crash left half-written is never read; the next compaction drops it.
]]
-- The task hash holding the segments: a script's KEYS[1] unless named (every caller's KEYS[1] is it).
local function __snapshotJson(snapshot, taskKey)
  if snapshot then return snapshot end
  taskKey = taskKey or KEYS[1]
  local live = redis.call('HMGET', taskKey, 'artifactsGen', 'artifactsSegments')
  if not live[1] then return nil end
  local fields = {}
  for i = 0, tonumber(live[2] or '0') - 1 do fields[#fields + 1] = 'artseg:' .. live[1] .. ':' .. i end
  if #fields == 0 then return '[]' end
  return table.concat(redis.call('HMGET', taskKey, unpack(fields)))
end

-- `chunksKey`: false when the caller knows there is no pending chunk (it deleted the list).
local function __storedArtifacts(snapshot, chunksKey, taskKey)
  snapshot = __snapshotJson(snapshot, taskKey)
  local chunks = chunksKey and redis.call('LRANGE', chunksKey, '0', '-1') or {}
  if #chunks == 0 then return snapshot end
  snapshot = snapshot or '[]'
  return '{"snapshotBytes":' .. #snapshot .. ',"snapshot":' .. snapshot .. ',"chunks":[' .. table.concat(chunks, ',') .. ']}'
end

-- What the stored artifacts weigh (snapshot and pending chunks), from counts kept in the hash: O(1).
-- `segmentBytes` and `chunkBytes`: the hash's 'artifactsSegmentBytes' and 'artifactChunkBytes', read by the caller.
local function __artifactsWeightWith(taskKey, segmentBytes, chunkBytes)
  return redis.call('HSTRLEN', taskKey, 'artifacts') + tonumber(segmentBytes or '0') + tonumber(chunkBytes or '0')
end

local function __artifactsWeight(taskKey)
  local counts = redis.call('HMGET', taskKey, 'artifactsSegmentBytes', 'artifactChunkBytes')
  return __artifactsWeightWith(taskKey, counts[1], counts[2])
end

local function __dropSegmentsOf(taskKey, generation, count)
  for i = 0, count - 1 do redis.call('HDEL', taskKey, 'artseg:' .. generation .. ':' .. i) end
end

-- The draft of a compaction that did not switch (a crash, a lost lease): its segments go.
local function __dropDraft(taskKey)
  local draft = redis.call('HGET', taskKey, 'artifactsDraft')
  if not draft then return end
  local generation, count = string.match(draft, '^(%d+) (%d+)')
  __dropSegmentsOf(taskKey, generation, tonumber(count))
  redis.call('HDEL', taskKey, 'artifactsDraft')
end

-- The live segmented snapshot (and any draft) go: the caller writes the snapshot whole in 'artifacts'.
-- One read when there are none (the usual case: a snapshot that fits one segment).
local function __dropSegments(taskKey)
  local live = redis.call('HMGET', taskKey, 'artifactsGen', 'artifactsSegments', 'artifactsDraft', 'artifactsSegmentBytes')
  if live[3] then __dropDraft(taskKey) end
  if live[1] then __dropSegmentsOf(taskKey, live[1], tonumber(live[2] or '0')) end
  if live[1] or live[2] or live[4] then redis.call('HDEL', taskKey, 'artifactsGen', 'artifactsSegments', 'artifactsSegmentBytes') end
end
