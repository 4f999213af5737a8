--[[
  Reserve a new task of a consumer before anything of it is stored: refused when the consumer
  has as many tasks in progress as its plan allows (the active set, swept by the caller of the
  tasks that ended) or started as many today; else the task joins the active set and is counted
  in the day's and the month's usage. Check and count are one step, so gateways racing for the
  last place cannot both take it.
  KEYS[1] active set (ZSET task id -> reserved at ms)   KEYS[2] day usage hash   KEYS[3] month usage hash
  ARGV[1] task id   ARGV[2] now (ms)   ARGV[3] concurrent tasks (0 = no limit)   ARGV[4] tasks per day (0 = no limit)
  ARGV[5] day usage TTL (s)   ARGV[6] month usage TTL (s)
  Returns {'OK'} | {'ACTIVE', tasks in progress} | {'DAY', tasks today}
]]
local concurrent = tonumber(ARGV[3])
local perDay = tonumber(ARGV[4])
if concurrent > 0 then
  local active = redis.call('ZCARD', KEYS[1])
  if active >= concurrent then return {'ACTIVE', active} end
end
if perDay > 0 then
  local today = tonumber(redis.call('HGET', KEYS[2], 'tasks') or '0')
  if today >= perDay then return {'DAY', today} end
end
-- Without a concurrency limit nothing reads the set: it is not kept, so it cannot grow unbounded.
if concurrent > 0 then redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1]) end
redis.call('HINCRBY', KEYS[2], 'tasks', 1)
redis.call('EXPIRE', KEYS[2], ARGV[5])
redis.call('HINCRBY', KEYS[3], 'tasks', 1)
redis.call('EXPIRE', KEYS[3], ARGV[6])
return {'OK'}
