--[[
  Record (or update) a dead letter: a delivery that exhausted its retries, failed for good, or
  whose replay failed. The oldest beyond the cap are dropped.
  One slot: a push shard's.
  KEYS[1] dead letters (hash id → JSON)   KEYS[2] dead-letter index (zset id → dead-at ms)
  ARGV[1] id   ARGV[2] dead letter JSON   ARGV[3] dead-at (ms)   ARGV[4] most dead letters kept in this shard
  Returns {'OK', dropped}
]]
local lettersKey, indexKey = KEYS[1], KEYS[2]
redis.call('HSET', lettersKey, ARGV[1], ARGV[2])
redis.call('ZADD', indexKey, ARGV[3], ARGV[1])
local dropped = 0
local over = redis.call('ZCARD', indexKey) - tonumber(ARGV[4])
if over > 0 then
  -- ZPOPMIN answers id, score, id, score …
  local popped = redis.call('ZPOPMIN', indexKey, over)
  for i = 1, #popped, 2 do dropped = dropped + redis.call('HDEL', lettersKey, popped[i]) end
end
return {'OK', dropped}
