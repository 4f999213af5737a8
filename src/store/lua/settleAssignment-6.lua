--[[
  Record how one of a coordinator's assignments ended its turn. A child that needs input keeps
  its slot and queues its question for the coordinator; a child that reached a terminal state
  frees its slot. Says whether the coordinator's turn should resume: when every assignment of
  the delegation has settled, or at the first failure under the fail-fast policy.
  Idempotent: settling the same outcome twice changes nothing.
  KEYS[1] coordinator task hash   KEYS[2] assignments   KEYS[3] pending assignments (list)
  KEYS[4] delegations             KEYS[5] slots           KEYS[6] questions (list)
  ARGV[1] child task id   ARGV[2] outcome: completed | failed | canceled | rejected | input-required
  ARGV[3] the child's question (input-required) or final message ('' = none)   ARGV[4] now (ms)
  Returns {'UNKNOWN'} | {'ALREADY'} | {'QUESTION'} | {'SETTLED'} | {'WAKE', wake sequence, turn}
  @once-shared: a call re-sent after a lost connection returns the first reply, even after other
  processes' calls for the same coordinator (src/store/scripts.ts).
  @include terminal
]]
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return {'UNKNOWN'} end
local record = cjson.decode(raw)
local previous = record.state
if previous == ARGV[2] or previous == 'completed' or previous == 'failed' or previous == 'canceled'
  or previous == 'rejected' then
  return {'ALREADY'}
end
if ARGV[2] == 'input-required' then
  record.state = 'input-required'
  record.question = ARGV[3]
  redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(record))
  redis.call('RPUSH', KEYS[6], ARGV[1])
  return {'QUESTION'}
end
record.state = ARGV[2]
record.settledAtMs = tonumber(ARGV[4])
record.question = nil
if ARGV[3] ~= '' then record.message = ARGV[3] end
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(record))
if previous == 'queued' then
  redis.call('LREM', KEYS[3], 1, ARGV[1])
else
  redis.call('HINCRBY', KEYS[5], 'total', -1)
  redis.call('HINCRBY', KEYS[5], 'role:' .. record.role, -1)
end
local settled = redis.call('HINCRBY', KEYS[4], record.delegation .. '#settled', 1)
local delegation = cjson.decode(redis.call('HGET', KEYS[4], record.delegation))
local failedFast = delegation.onFailure == 'fail-fast' and ARGV[2] ~= 'completed'
-- Whoever grants slots next (this settle's caller, a sibling's settle, the woken coordinator)
-- must start none of the rest: grantSlots skips a delegation marked here.
-- Only the first failure wakes the coordinator: the assignments it then cancels settle quietly.
local firstFailure = failedFast and redis.call('HSETNX', KEYS[4], record.delegation .. '#failed', ARGV[1]) == 1
local state = redis.call('HGET', KEYS[1], 'state')
if __isTerminal(state) then
  return {'SETTLED'}
end
if settled >= delegation.count or firstFailure then
  return {'WAKE', redis.call('HINCRBY', KEYS[1], 'wakeSeq', 1), redis.call('HGET', KEYS[1], 'turn')}
end
return {'SETTLED'}
