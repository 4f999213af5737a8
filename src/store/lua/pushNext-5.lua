--[[
  The outbox step of one task: for each enabled push config with no delivery in flight, take
  the next event after its cursor and mark it in flight (one delivery chain per config, so a
  later event never overtakes an earlier one); report deliveries already in flight too, so a
  sweeper can re-create a job that was lost. Calling it again changes nothing until a delivery
  settles (pushSettle), so every gateway and worker may call it at any time.
  One slot: the task's.
  KEYS[1] task hash   KEYS[2] push configs   KEYS[3] push cursors   KEYS[4] events   KEYS[5] pending artifact chunks (see appendEvents)
  ARGV[1] '1' to start new deliveries, '0' only to report
  Returns {'GONE'} when the task (or all its configs) is gone, else
    {'OK', drained, ownerKey, kind1, configId1, eventId1, eventJson1, kind2, ...} where kind is
    'new' (just marked in flight) or 'inflight' (was in flight already), and drained is '1' when
    the task is terminal and nothing is pending or in flight for any config (its outbox entry can go).
  A config whose next event the replay bound dropped (its receiver fell behind by more than
  replay.pushHoldMaxEvents) gets the Task snapshot instead, as of the newest event, whose id it
  is in flight under ("k:<configId>" = 'snapshot' in the cursors), with metadata.a2aGateway.replay
  naming what was skipped (its artifacts as include/storedArtifacts.lua reads them: the caller
  merges pending chunks, src/push/push-store.ts); once settled, the config goes on after that event.
  @include storedArtifacts
]]
local taskKey, configsKey, cursorsKey, eventsKey, chunksKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local fields = redis.call('HMGET', taskKey, 'owner', 'finishedAtMs', 'eventsTrimmedThrough', 'eventsTrimmed')
if not fields[1] then return {'GONE'} end
local trimmedThrough = fields[3]

local function idLess(a, b)
  local aMs, aSeq = string.match(a, '^(%d+)-(%d+)$')
  local bMs, bSeq = string.match(b, '^(%d+)-(%d+)$')
  if tonumber(aMs) ~= tonumber(bMs) then return tonumber(aMs) < tonumber(bMs) end
  return tonumber(aSeq) < tonumber(bSeq)
end

-- The task as it stands, as a StreamResponse {task} (history left out), noting the skip.
local function snapshotJson(settled, snapshotEventId)
  local task = redis.call('HMGET', taskKey, 'id', 'contextId', 'status', 'artifacts', 'metadata')
  local note = cjson.encode({reason = 'REPLAY_BUFFER_TRIMMED', lastEventId = settled, trimmedThroughEventId = trimmedThrough,
    snapshotEventId = snapshotEventId, eventsTrimmed = tonumber(fields[4] or '0'),
    message = 'Events after ' .. settled .. ' were dropped from the replay buffer before they could be delivered; this is the task as of event '
      .. snapshotEventId .. ', and the events after it follow.'})
  local metadata = task[5] or '{}'
  local gateway = '"a2aGateway":{"replay":' .. note .. '}'
  if metadata == '{}' then
    metadata = '{' .. gateway .. '}'
  elseif not string.find(metadata, '"a2aGateway"', 1, true) then
    metadata = '{' .. gateway .. ',' .. string.sub(metadata, 2)
  else
    local decoded = cjson.decode(metadata)
    if type(decoded.a2aGateway) ~= 'table' then decoded.a2aGateway = {} end
    decoded.a2aGateway.replay = cjson.decode(note)
    metadata = cjson.encode(decoded)
  end
  local artifacts = __storedArtifacts(task[4], chunksKey) or '[]'
  return '{"task":{"id":' .. cjson.encode(task[1]) .. ',"contextId":' .. cjson.encode(task[2]) .. ',"status":' .. task[3]
    .. (artifacts == '[]' and '' or (',"artifacts":' .. artifacts)) .. ',"metadata":' .. metadata .. '}}'
end
local configIds = redis.call('HKEYS', configsKey)
if #configIds == 0 then return {'GONE'} end
local result = {'OK', '1', fields[1]}
local drained = fields[2] ~= false
for _, configId in ipairs(configIds) do
  local config = cjson.decode(redis.call('HGET', configsKey, configId))
  if not config.disabled then
    local cursor = redis.call('HMGET', cursorsKey, 'd:' .. configId, 'i:' .. configId, 'k:' .. configId)
    local settled, inflight = cursor[1] or '0-0', cursor[2] or ''
    if inflight ~= '' then
      drained = false
      local json = ''
      if cursor[3] == 'snapshot' then
        json = snapshotJson(settled, inflight)
      else
        local entry = redis.call('XRANGE', eventsKey, inflight, inflight)
        if entry[1] then json = entry[1][2][2] end
      end
      table.insert(result, 'inflight')
      table.insert(result, configId)
      table.insert(result, inflight)
      table.insert(result, json)
    elseif trimmedThrough and idLess(settled, trimmedThrough) then
      -- Its next event is gone: the snapshot as of the newest event, in flight under that event's id.
      local newest = redis.call('XREVRANGE', eventsKey, '+', '-', 'COUNT', 1)
      if newest[1] then
        drained = false
        if ARGV[1] == '1' then
          redis.call('HSET', cursorsKey, 'i:' .. configId, newest[1][1], 'k:' .. configId, 'snapshot')
          table.insert(result, 'new')
          table.insert(result, configId)
          table.insert(result, newest[1][1])
          table.insert(result, snapshotJson(settled, newest[1][1]))
        end
      end
    else
      local entry = redis.call('XRANGE', eventsKey, '(' .. settled, '+', 'COUNT', 1)
      if entry[1] then
        drained = false
        if ARGV[1] == '1' then
          redis.call('HSET', cursorsKey, 'i:' .. configId, entry[1][1])
          table.insert(result, 'new')
          table.insert(result, configId)
          table.insert(result, entry[1][1])
          table.insert(result, entry[1][2][2])
        end
      end
    end
  end
end
if not drained then result[2] = '0' end
-- Push state lives exactly as long as its task: a finished task's keys carry its expiry.
local ttl = redis.call('PTTL', taskKey)
if ttl > 0 then
  redis.call('PEXPIRE', configsKey, ttl)
  redis.call('PEXPIRE', cursorsKey, ttl)
end
return result
