--[[
  The outbox step of one task: for each enabled push config with no delivery in flight, take
  the next event after its cursor and mark it in flight (one delivery chain per config, so a
  later event never overtakes an earlier one); report deliveries already in flight too, so a
  sweeper can re-create a job that was lost. Calling it again changes nothing until a delivery
  settles (pushSettle), so every gateway and worker may call it at any time.
  One slot: the task's.
  KEYS[1] task hash   KEYS[2] push configs   KEYS[3] push cursors   KEYS[4] events
  ARGV[1] '1' to start new deliveries, '0' only to report
  Returns {'GONE'} when the task (or all its configs) is gone, else
    {'OK', drained, ownerKey, kind1, configId1, eventId1, eventJson1, kind2, ...} where kind is
    'new' (just marked in flight) or 'inflight' (was in flight already), and drained is '1' when
    the task is terminal and nothing is pending or in flight for any config (its outbox entry can go).
]]
local taskKey, configsKey, cursorsKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local fields = redis.call('HMGET', taskKey, 'owner', 'finishedAtMs')
if not fields[1] then return {'GONE'} end
local configIds = redis.call('HKEYS', configsKey)
if #configIds == 0 then return {'GONE'} end
local result = {'OK', '1', fields[1]}
local drained = fields[2] ~= false
for _, configId in ipairs(configIds) do
  local config = cjson.decode(redis.call('HGET', configsKey, configId))
  if not config.disabled then
    local cursor = redis.call('HMGET', cursorsKey, 'd:' .. configId, 'i:' .. configId)
    local settled, inflight = cursor[1] or '0-0', cursor[2] or ''
    if inflight ~= '' then
      drained = false
      local entry = redis.call('XRANGE', eventsKey, inflight, inflight)
      local json = ''
      if entry[1] then json = entry[1][2][2] end
      table.insert(result, 'inflight')
      table.insert(result, configId)
      table.insert(result, inflight)
      table.insert(result, json)
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
