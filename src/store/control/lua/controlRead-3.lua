--[[
  Every control-plane resource with its version, and the change sequence they are current at:
  one consistent picture (a process loads it at start and whenever the sequence moved).
  One slot: the control plane's ({control}).
  KEYS[1] versions   KEYS[2] resources   KEYS[3] change sequence
  Returns {seq, field, resource JSON, version, field, resource JSON, version, ...}
]]
local reply = {redis.call('GET', KEYS[3]) or '0'}
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  reply[#reply + 1] = all[i]
  reply[#reply + 1] = all[i + 1]
  reply[#reply + 1] = redis.call('HGET', KEYS[1], all[i]) or '0'
end
return reply
