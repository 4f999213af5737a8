--[[
  A task's artifacts as one string, for every script that reads them (`@include storedArtifacts`):
  the compacted snapshot (the task hash's 'artifacts') alone while no chunk is pending, else
  {"snapshotBytes":n,"snapshot":[...],"chunks":[<entry>,...]} with the entries of the pending chunk list
  (appendEvents RPUSHes them). Only strings are joined: no JSON is decoded here; the reader merges
  them (src/store/stored-artifacts.ts).
]]
local function __storedArtifacts(snapshot, chunksKey)
  local chunks = redis.call('LRANGE', chunksKey, 0, -1)
  if #chunks == 0 then return snapshot end
  snapshot = snapshot or '[]'
  return '{"snapshotBytes":' .. #snapshot .. ',"snapshot":' .. snapshot .. ',"chunks":[' .. table.concat(chunks, ',') .. ']}'
end
