--[[
  Read a task's push-notification configs for the task's owner.
  One slot: the task's.
  KEYS[1] task hash   KEYS[2] push configs
  ARGV[1] ownerKey   ARGV[2] configId ('' = all of them)
  Returns {'NOT_FOUND'} (no such task for this owner) | {'OK', config JSON...} (none when the config is unknown)
]]
local taskKey, configsKey = KEYS[1], KEYS[2]
local owner = redis.call('HGET', taskKey, 'owner')
if (not owner) or owner ~= ARGV[1] then return {'NOT_FOUND'} end
local result = {'OK'}
if ARGV[2] ~= '' then
  local config = redis.call('HGET', configsKey, ARGV[2])
  if config then table.insert(result, config) end
  return result
end
for _, config in ipairs(redis.call('HVALS', configsKey)) do table.insert(result, config) end
return result
