--[[
  Give free slots to waiting assignments, oldest first: at most the delegation's maxParallel
  of one coordinator's assignments hold a slot at once, and at most a role's maxParallel of
  that role. An assignment whose role is full is passed over for a later one of another role
  (FIFO within each role). A coordinator that ended or is being canceled grants nothing, so
  its queued assignments never start; nor does a fail-fast delegation after its first failure
  (settleAssignment marks it '<name>#failed').
  KEYS[1] coordinator task hash   KEYS[2] assignments   KEYS[3] pending assignments (list)
  KEYS[4] delegations             KEYS[5] slots
  ARGV[1] now (ms)
  Returns the child task ids granted a slot, in grant order (the caller enqueues their turns).
  @once-shared: a call re-sent after a lost connection returns the first reply, even after other
  processes' calls for the same coordinator (src/store/scripts.ts).
  @include terminal
]]
local state = redis.call('HGET', KEYS[1], 'state')
if __isTerminal(state) or redis.call('HEXISTS', KEYS[1], 'cancelRequestedAtMs') == 1 then
  return {}
end
local granted = {}
local total = tonumber(redis.call('HGET', KEYS[5], 'total') or '0')
local settings = {}
for _, childId in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
  local record = cjson.decode(redis.call('HGET', KEYS[2], childId))
  local delegation = settings[record.delegation]
  if not delegation then
    delegation = cjson.decode(redis.call('HGET', KEYS[4], record.delegation))
    settings[record.delegation] = delegation
  end
  if delegation.stopped == nil then
    delegation.stopped = redis.call('HEXISTS', KEYS[4], record.delegation .. '#failed') == 1
  end
  local roleField = 'role:' .. record.role
  local roleCount = tonumber(redis.call('HGET', KEYS[5], roleField) or '0')
  local roleLimit = delegation.roleLimits and delegation.roleLimits[record.role]
  if not delegation.stopped and total < delegation.maxParallel and (roleLimit == nil or roleCount < roleLimit) then
    redis.call('LREM', KEYS[3], 1, childId)
    total = total + 1
    redis.call('HSET', KEYS[5], roleField, roleCount + 1)
    record.state = 'running'
    record.grantedAtMs = tonumber(ARGV[1])
    record.grantSeq = redis.call('HINCRBY', KEYS[5], 'seq', 1)
    redis.call('HSET', KEYS[2], childId, cjson.encode(record))
    table.insert(granted, childId)
  end
end
redis.call('HSET', KEYS[5], 'total', total)
return granted
