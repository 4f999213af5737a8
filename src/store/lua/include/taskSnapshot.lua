--[[
  A task as its owner reads it, one definition for readTask and for the answer finishTurn
  publishes to a waiting SendMessage (`@include taskSnapshot`, after `@include storedArtifacts`).
  `ownerKey`: nil when the caller already knows the owner (finishTurn: the one who created the
  task); `historyLength`: -1 = all, 0 = none, n = the last n; `lastEventId`: nil = the newest
  entry of `eventsKey`; `chunksKey`: the task's pending artifact chunks (see appendEvents). Returns nil when the task is missing or another owner's, else the reply
  readTask-4.lua documents (src/store/task-read.ts parses it).
]]
local function __taskSnapshot(taskKey, historyKey, eventsKey, chunksKey, ownerKey, historyLength, lastEventId)
  local fields = redis.call('HMGET', taskKey, 'owner', 'id', 'contextId', 'status', 'artifacts', 'metadata',
    'cancelRequestedAtMs', 'cancelAcknowledgedAtMs', 'cancelStoppedAtMs', 'cancelOutcome', 'outcome',
    'usageInputTokens', 'usageOutputTokens', 'directReply', 'eventsTrimmedThrough', 'eventsTrimmed', 'generation')
  if (not fields[1]) or (ownerKey and fields[1] ~= ownerKey) then return nil end
  if not lastEventId then
    local last = redis.call('XREVRANGE', eventsKey, '+', '-', 'COUNT', 1)
    lastEventId = ''
    if last[1] then lastEventId = last[1][1] end
  end
  local result = {fields[2], fields[3], fields[4], __storedArtifacts(fields[5], chunksKey, taskKey) or '[]', fields[6] or '{}', lastEventId,
    fields[7] or '', fields[8] or '', fields[9] or '', fields[10] or '', fields[11] or '', fields[12] or '', fields[13] or '', fields[14] or '',
    fields[15] or '', fields[16] or '0', fields[17] or '0'}
  if historyLength ~= 0 then
    -- Text where it is known: Redis turns a Lua number argument into text with snprintf, on every call.
    local from = '0'
    if historyLength > 0 then from = -historyLength end
    for _, message in ipairs(redis.call('LRANGE', historyKey, from, '-1')) do table.insert(result, message) end
  end
  return result
end
