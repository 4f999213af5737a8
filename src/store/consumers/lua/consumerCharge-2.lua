--[[
  Charge model tokens and their cost to a consumer's usage of the day and of the month, and
  answer the totals its budgets are held against. The charge is always recorded (the tokens were
  used); the caller stops the turn when a total is past its budget. A correction after the
  backend's own count may be negative.
  KEYS[1] day usage hash   KEYS[2] month usage hash
  ARGV[1] input tokens   ARGV[2] output tokens   ARGV[3] spend
  ARGV[4] day usage TTL (s)   ARGV[5] month usage TTL (s)
  Returns {tokens today (input and output), spend this month (string)}
]]
for i = 1, 2 do
  redis.call('HINCRBY', KEYS[i], 'tokensIn', ARGV[1])
  redis.call('HINCRBY', KEYS[i], 'tokensOut', ARGV[2])
  redis.call('HINCRBYFLOAT', KEYS[i], 'spend', ARGV[3])
  redis.call('EXPIRE', KEYS[i], ARGV[3 + i])
end
local day = redis.call('HMGET', KEYS[1], 'tokensIn', 'tokensOut')
local spend = redis.call('HGET', KEYS[2], 'spend')
return {tonumber(day[1] or '0') + tonumber(day[2] or '0'), spend}
