--[[
  Remove a dead letter (its replay was delivered).
  One slot: a push shard's.
  KEYS[1] dead letters   KEYS[2] dead-letter index
  ARGV[1] id
  Returns {'REMOVED', '1' | '0'}
]]
redis.call('ZREM', KEYS[2], ARGV[1])
return {'REMOVED', tostring(redis.call('HDEL', KEYS[1], ARGV[1]))}
