--[[
  Read one task for its owner, with the id of the last event it includes, atomically: a
  subscriber that starts from this snapshot continues with exactly the events after that id.
  KEYS[1] task hash   KEYS[2] history   KEYS[3] events
  ARGV[1] ownerKey   ARGV[2] history length (-1 = all, 0 = none)
  Returns {} when missing or foreign, else {id, contextId, status, artifacts, metadata, lastEventId,
    cancelRequestedAtMs, cancelAcknowledgedAtMs, cancelStoppedAtMs, cancelOutcome, outcome,
    usageInputTokens, usageOutputTokens, directReply, eventsTrimmedThrough, eventsTrimmed, history...}
  eventsTrimmedThrough and eventsTrimmed say what the replay bound dropped (boundReplay.lua): with
  lastEventId they tell, atomically with the snapshot, whether a Last-Event-ID is older than the buffer.
]]
local fields = redis.call('HMGET', KEYS[1], 'owner', 'id', 'contextId', 'status', 'artifacts', 'metadata',
  'cancelRequestedAtMs', 'cancelAcknowledgedAtMs', 'cancelStoppedAtMs', 'cancelOutcome', 'outcome',
  'usageInputTokens', 'usageOutputTokens', 'directReply', 'eventsTrimmedThrough', 'eventsTrimmed')
if (not fields[1]) or fields[1] ~= ARGV[1] then return {} end
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
local lastId = ''
if last[1] then lastId = last[1][1] end
local result = {fields[2], fields[3], fields[4], fields[5], fields[6], lastId,
  fields[7] or '', fields[8] or '', fields[9] or '', fields[10] or '', fields[11] or '', fields[12] or '', fields[13] or '', fields[14] or '',
  fields[15] or '', fields[16] or '0'}
local n = tonumber(ARGV[2])
if n ~= 0 then
  local from = 0
  if n > 0 then from = -n end
  for _, message in ipairs(redis.call('LRANGE', KEYS[2], from, -1)) do table.insert(result, message) end
end
return result
