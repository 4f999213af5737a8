--[[
  Delete one push-notification config of a task, for the task's owner. Idempotent: deleting a
  config that is not there changes nothing and succeeds. A delivery already in flight for it
  finds the config gone and sends nothing more.
  One slot: the task's.
  KEYS[1] task hash   KEYS[2] push configs   KEYS[3] push cursors
  ARGV[1] ownerKey   ARGV[2] configId
  Returns {'NOT_FOUND'} (no such task for this owner) | {'DELETED', '1' | '0'}
]]
local taskKey, configsKey, cursorsKey = KEYS[1], KEYS[2], KEYS[3]
local owner = redis.call('HGET', taskKey, 'owner')
if (not owner) or owner ~= ARGV[1] then return {'NOT_FOUND'} end
local removed = redis.call('HDEL', configsKey, ARGV[2])
redis.call('HDEL', cursorsKey, 'd:' .. ARGV[2], 'i:' .. ARGV[2], 'k:' .. ARGV[2], 'p:' .. ARGV[2])
return {'DELETED', tostring(removed)}
