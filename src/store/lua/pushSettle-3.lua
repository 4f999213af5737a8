--[[
  Settle the delivery of one event to one push config: delivered, dead-lettered, or the
  receiver answered 410 Gone (the config is disabled: nothing more is sent to it). The config's
  cursor moves past the event and the next event, if there is one, is marked in flight at once
  (what pushNext would do for this config, without a second round trip). Idempotent: settling an
  event the cursor is already past, or that is not the one in flight, changes nothing.
  One slot: the task's.
  KEYS[1] push configs   KEYS[2] push cursors   KEYS[3] events
  ARGV[1] configId   ARGV[2] eventId   ARGV[3] 'delivered' | 'dead' | 'gone'   ARGV[4] disabled JSON (for 'gone')
  A 'gone' config's cursor is parked as "p:<configId>": the replay bound holds no events for it.
  Returns {'STALE'} | {'SETTLED'} | {'SETTLED', nextEventId, nextEventJson} (the next one, now in flight)
  An event settled behind what the replay bound dropped ("trimmedThrough" in the cursors) starts
  nothing here: the next pushNext gives that config the Task snapshot instead.
]]
local configsKey, cursorsKey, eventsKey = KEYS[1], KEYS[2], KEYS[3]
local configId, eventId = ARGV[1], ARGV[2]
local inflight = redis.call('HGET', cursorsKey, 'i:' .. configId)
if inflight ~= eventId then return {'STALE'} end
redis.call('HSET', cursorsKey, 'd:' .. configId, eventId, 'i:' .. configId, '')
-- A snapshot delivery (pushNext) stood for every event through this one: the chain goes on after it.
redis.call('HDEL', cursorsKey, 'k:' .. configId)
if ARGV[3] == 'gone' then
  local json = redis.call('HGET', configsKey, configId)
  if json then
    local config = cjson.decode(json)
    config.disabled = cjson.decode(ARGV[4])
    redis.call('HSET', configsKey, configId, cjson.encode(config))
  end
  -- Parked where the replay bound does not see it (a disabled config holds no events for later);
  -- enabling the config again (pushSaveConfig) takes it back.
  redis.call('HSET', cursorsKey, 'p:' .. configId, eventId)
  redis.call('HDEL', cursorsKey, 'd:' .. configId)
  return {'SETTLED'}
end
if redis.call('HEXISTS', configsKey, configId) == 0 then return {'SETTLED'} end
local trimmedThrough = redis.call('HGET', cursorsKey, 'trimmedThrough')
if trimmedThrough then
  local ms, seq = string.match(eventId, '^(%d+)-(%d+)$')
  local tMs, tSeq = string.match(trimmedThrough, '^(%d+)-(%d+)$')
  if tonumber(ms) < tonumber(tMs) or (tonumber(ms) == tonumber(tMs) and tonumber(seq) < tonumber(tSeq)) then return {'SETTLED'} end
end
local nextEntry = redis.call('XRANGE', eventsKey, '(' .. eventId, '+', 'COUNT', 1)
if not nextEntry[1] then return {'SETTLED'} end
redis.call('HSET', cursorsKey, 'i:' .. configId, nextEntry[1][1])
return {'SETTLED', nextEntry[1][1], nextEntry[1][2][2]}
