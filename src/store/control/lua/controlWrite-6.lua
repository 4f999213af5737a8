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
  KEYS[5] claims (hash claim → "<kind>/<name>" holding it: what must be unique across the
          resources, a partner's keyId or an issuer's iss; checked here, so two writers racing
          on different gateways can never both take one)
  KEYS[6] claimed (hash "<kind>/<name>" → its claims joined by newlines, to release them)
  ARGV[1] field "<kind>/<name>"
  ARGV[2] expected version: '' any, '*' any existing, '0' none (create only), else exactly that version
  ARGV[3] 'put' | 'delete'   ARGV[4] the resource JSON ('' for a delete)
  ARGV[5] actor   ARGV[6] kind   ARGV[7] name   ARGV[8] tenant   ARGV[9] now (ms)
  ARGV[10] audit entries kept (about)   ARGV[11] most resources of all kinds
  ARGV[12] the only tenant whose resource the writer may change ('*' any): another tenant's
           existing resource is answered as missing, checked here so no race lets it through
  ARGV[13] the claims of the resource written, joined by newlines ('' none; a delete releases its claims)
  Returns {'OK', version, seq, action} | {'STALE', current version (0 when absent)} | {'MISSING'} | {'FULL', count}
          | {'CLASH', claim, field of the resource holding it}
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
local function split(text)
  local parts = {}
  for part in string.gmatch(text, '[^\n]+') do parts[#parts + 1] = part end
  return parts
end
local wanted = {}
if ARGV[3] ~= 'delete' then
  wanted = split(ARGV[13])
  for _, claim in ipairs(wanted) do
    local holder = redis.call('HGET', KEYS[5], claim)
    if holder and holder ~= field then return {'CLASH', claim, holder} end
  end
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
-- The claims the resource held are released, then those it holds now taken.
for _, claim in ipairs(split(redis.call('HGET', KEYS[6], field) or '')) do
  if redis.call('HGET', KEYS[5], claim) == field then redis.call('HDEL', KEYS[5], claim) end
end
if #wanted == 0 then
  redis.call('HDEL', KEYS[6], field)
else
  for _, claim in ipairs(wanted) do redis.call('HSET', KEYS[5], claim, field) end
  redis.call('HSET', KEYS[6], field, ARGV[13])
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
