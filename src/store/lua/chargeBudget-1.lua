--[[
  Add a charge to the running turn's budget total, fenced by the lease generation. The total
  lives in the task hash so a worker that takes the turn over continues from it, and a
  replaced worker cannot spend.
  KEYS[1] task hash
  ARGV[1] lease generation   ARGV[2] units (>= 0)
  Returns {'STALE'} | {'OK', total}
  @once: a call re-sent after a lost connection returns the first reply (src/store/scripts.ts).
  @include fence
]]
if __leaseIsStale() then return {'STALE'} end
return {'OK', redis.call('HINCRBYFLOAT', KEYS[1], 'turnBudgetSpent', ARGV[2])}
