--[[
  A receiver's circuit breaker, shared by every worker: after `threshold` consecutive failures
  the circuit opens for `cooldown` ms and nothing is sent to the receiver; then one probe is let
  through (half-open); its success closes the circuit, its failure opens it again.
  One key (one slot).
  KEYS[1] breaker hash: failures, openUntilMs, probeUntilMs
  ARGV[1] 'admit' | 'success' | 'failure'   ARGV[2] now (ms)   ARGV[3] threshold   ARGV[4] cooldown (ms)
  ARGV[5] how long a probe may take (ms)   ARGV[6] how long the hash is kept after the last change (ms)
  Returns {'ALLOW', consecutive failures so far} | {'WAIT', untilMs} for admit; {'CLOSED'} | {'OPEN', untilMs} for success and failure
]]
local key = KEYS[1]
local now, threshold, cooldown = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local fields = redis.call('HMGET', key, 'failures', 'openUntilMs', 'probeUntilMs')
local failures = tonumber(fields[1] or '0')
local openUntil = tonumber(fields[2] or '0')
local probeUntil = tonumber(fields[3] or '0')
if ARGV[1] == 'admit' then
  if failures < threshold then return {'ALLOW', failures} end
  if now < openUntil then return {'WAIT', openUntil} end
  -- Half-open: one probe at a time.
  if now < probeUntil then return {'WAIT', probeUntil} end
  redis.call('HSET', key, 'probeUntilMs', now + tonumber(ARGV[5]))
  redis.call('PEXPIRE', key, ARGV[6])
  return {'ALLOW', failures}
end
if ARGV[1] == 'success' then
  if failures > 0 then redis.call('DEL', key) end
  return {'CLOSED'}
end
failures = redis.call('HINCRBY', key, 'failures', 1)
redis.call('HSET', key, 'probeUntilMs', 0)
redis.call('PEXPIRE', key, ARGV[6])
if failures >= threshold then
  redis.call('HSET', key, 'openUntilMs', now + cooldown)
  return {'OPEN', now + cooldown}
end
return {'CLOSED'}
