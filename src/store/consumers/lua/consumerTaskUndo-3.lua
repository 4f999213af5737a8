--[[
  Give back a reservation of consumerTaskStart whose task was not created after all (a re-sent
  message answered with its earlier task, a refusal by another limit, a failure): it leaves the
  active set and the day's and month's counts.
  KEYS[1] active set   KEYS[2] day usage hash   KEYS[3] month usage hash
  ARGV[1] task id
  Returns {1}
]]
redis.call('ZREM', KEYS[1], ARGV[1])
for i = 2, 3 do
  if tonumber(redis.call('HGET', KEYS[i], 'tasks') or '0') > 0 then redis.call('HINCRBY', KEYS[i], 'tasks', -1) end
end
return {1}
