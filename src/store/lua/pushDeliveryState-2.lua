--[[
  What a delivery job needs to know before it sends: the config as it is now, and where its
  cursor stands (a job for an event already settled sends nothing).
  One slot: the task's.
  KEYS[1] push configs   KEYS[2] push cursors
  ARGV[1] configId
  Returns {config JSON or '', settled event id, event id in flight}
]]
local config = redis.call('HGET', KEYS[1], ARGV[1])
local cursor = redis.call('HMGET', KEYS[2], 'd:' .. ARGV[1], 'i:' .. ARGV[1])
return {config or '', cursor[1] or '', cursor[2] or ''}
