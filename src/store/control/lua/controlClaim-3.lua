--[[
  Enters a stored resource's claims (a partner's keyIds, an issuer's iss) into the claims index
  when it holds none yet: a resource written before the index existed. Only while the resource
  is still exactly the one its caller read, so a claim is never taken for a version that no
  longer holds it; a claim another resource already holds is left to that one.
  One slot: the control plane's ({control}).
  KEYS[1] resources   KEYS[2] claims   KEYS[3] claimed
  ARGV[1] field "<kind>/<name>"   ARGV[2] the resource JSON as read   ARGV[3] its claims, joined by newlines
  Returns the number of claims entered (0 when the resource changed or was indexed already).
]]
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] or redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return 0 end
local entered = 0
for claim in string.gmatch(ARGV[3], '[^\n]+') do
  entered = entered + redis.call('HSETNX', KEYS[2], claim, ARGV[1])
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
return entered
