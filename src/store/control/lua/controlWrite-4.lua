--[[
  Writes or deletes one control-plane resource (src/control/), checking the version its writer
  expects (If-Match), and records the change in the same step: the resource's new version, the
  global change sequence and an audit entry move together or not at all, so a reader that saw
  a sequence number has seen every change up to it.
  @once: a re-sent call (a dropped connection) answers its first reply instead of writing twice.
  One slot: the control plane's ({control}).
  KEYS[1] versions (hash "<kind>/<name>" → last version; kept after a delete, so a re-created
          resource continues the count and a stale If-Match never matches it again)
  KEYS[2] resources (hash "<kind>/<name>" → resource JSON)
  KEYS[3] change sequence (string counter)
  KEYS[4] audit (stream)
  ARGV[1] field "<kind>/<name>"
  ARGV[2] expected version: '' any, '*' any existing, '0' none (create only), else exactly that version
  ARGV[3] 'put' | 'delete'   ARGV[4] the resource JSON ('' for a delete)
  ARGV[5] actor   ARGV[6] kind   ARGV[7] name   ARGV[8] tenant   ARGV[9] now (ms)
  ARGV[10] audit entries kept (about)   ARGV[11] most resources of all kinds
  ARGV[12] the only tenant whose resource the writer may change ('*' any): another tenant's
           existing resource is answered as missing, checked here so no race lets it through
  Returns {'OK', version, seq, action} | {'STALE', current version (0 when absent)} | {'MISSING'} | {'FULL', count}
]]
local field = ARGV[1]
local exists = redis.call('HEXISTS', KEYS[2], field) == 1
local last = tonumber(redis.call('HGET', KEYS[1], field) or '0')
local current = 0
if exists then
  current = last
  if ARGV[12] ~= '*' and cjson.decode(redis.call('HGET', KEYS[2], field)).tenant ~= ARGV[12] then return {'MISSING'} end
end
local expected = ARGV[2]
if expected == '*' then
  if not exists then return {'STALE', 0} end
elseif expected ~= '' and tonumber(expected) ~= current then
  return {'STALE', current}
end
local action
if ARGV[3] == 'delete' then
  if not exists then return {'MISSING'} end
  redis.call('HDEL', KEYS[2], field)
  action = 'delete'
else
  if not exists then
    local count = redis.call('HLEN', KEYS[2])
    if count >= tonumber(ARGV[11]) then return {'FULL', count} end
    action = 'create'
  else
    action = 'replace'
  end
  redis.call('HSET', KEYS[2], field, ARGV[4])
end
local version = last + 1
redis.call('HSET', KEYS[1], field, version)
-- A new sequence (first write, or Redis lost its data) starts from the time, not from 0: a
-- process whose view is at some number from before can never mistake a new history for its own.
if redis.call('EXISTS', KEYS[3]) == 0 then redis.call('SET', KEYS[3], string.format('%d', tonumber(ARGV[9]) * 1000)) end
local seq = redis.call('INCR', KEYS[3])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[10], '*',
  'actor', ARGV[5], 'action', action, 'kind', ARGV[6], 'name', ARGV[7], 'tenant', ARGV[8],
  'version', version, 'seq', seq, 'at', ARGV[9])
return {'OK', version, seq, action}
