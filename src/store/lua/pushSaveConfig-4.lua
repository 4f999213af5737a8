--[[
  Create or replace one push-notification config of a task, for the task's owner. A new
  config's delivery cursor starts at the beginning of the task's events (a config that rode on
  the message that created the task) or after its newest event (one added later); a replaced
  config keeps its cursor, and replacing a config a 410 disabled enables it again.
  One slot: the task's.
  KEYS[1] task hash   KEYS[2] push configs (hash configId → config JSON)
  KEYS[3] push cursors (hash "d:<configId>" → last settled event id, "i:<configId>" → event id in flight)
  KEYS[4] events
  ARGV[1] ownerKey   ARGV[2] configId   ARGV[3] config JSON   ARGV[4] most configs per task
  ARGV[5] 'begin' | 'now' | an event id: where a new config's cursor starts (before every event,
          after the newest, after that event)
  Returns {'NOT_FOUND'} | {'TOO_MANY', count} | {'SAVED', '1' when new else '0'}
]]
local taskKey, configsKey, cursorsKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner = redis.call('HGET', taskKey, 'owner')
if (not owner) or owner ~= ARGV[1] then return {'NOT_FOUND'} end
local configId = ARGV[2]
local isNew = redis.call('HEXISTS', configsKey, configId) == 0
if isNew then
  local count = redis.call('HLEN', configsKey)
  if count >= tonumber(ARGV[4]) then return {'TOO_MANY', count} end
  local start = '0-0'
  if ARGV[5] == 'now' then
    local last = redis.call('XREVRANGE', eventsKey, '+', '-', 'COUNT', 1)
    if last[1] then start = last[1][1] end
  elseif ARGV[5] ~= 'begin' then
    start = ARGV[5]
  end
  redis.call('HSET', cursorsKey, 'd:' .. configId, start, 'i:' .. configId, '')
else
  -- A config a 410 disabled had its cursor parked (pushSettle): enabled again, it resumes there.
  local parked = redis.call('HGET', cursorsKey, 'p:' .. configId)
  if parked then
    redis.call('HSET', cursorsKey, 'd:' .. configId, parked)
    redis.call('HDEL', cursorsKey, 'p:' .. configId)
  end
end
redis.call('HSET', configsKey, configId, ARGV[3])
-- Push state lives exactly as long as its task: a finished task's keys carry its expiry.
local ttl = redis.call('PTTL', taskKey)
if ttl > 0 then
  redis.call('PEXPIRE', configsKey, ttl)
  redis.call('PEXPIRE', cursorsKey, ttl)
end
if isNew then return {'SAVED', '1'} end
return {'SAVED', '0'}
