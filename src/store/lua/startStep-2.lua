--[[
  Journal a side-effecting step as started before it runs (invariant 4), unless this turn
  already journalled a step of that name: then return that record instead (done: its result;
  started without a result: the step's outcome is unknown and must be reconciled, not re-run).
  Fenced by the lease generation.
  KEYS[1] task hash   KEYS[2] steps hash
  ARGV[1] lease generation   ARGV[2] step field ("<turn>:<name>")   ARGV[3] started record JSON
  Returns {'STALE'} | {'STARTED'} | {'EXISTS', record JSON}
  @once: a call re-sent after a lost connection returns the first reply (src/store/scripts.ts).
  @include fence
]]
if __leaseIsStale() then return {'STALE'} end
if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[3]) == 1 then return {'STARTED'} end
return {'EXISTS', redis.call('HGET', KEYS[2], ARGV[2])}
