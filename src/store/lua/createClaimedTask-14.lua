--[[
  A new task's claim and create in one call, on a single Redis only: claimTask-7.lua (the owner's
  slot) and then createTask-7.lua (the task's slot), where the two steps cost two round trips and
  two script calls. Its keys span two slots, so a Cluster never runs it (src/store/scripts.ts
  refuses it there, and exempts it from the suite's one-slot check): there the steps stay apart.
  @single-redis
  KEYS[1] to KEYS[7] createTask's keys, in its order   KEYS[8] to KEYS[14] claimTask's keys, in its order
  ARGV[1] to ARGV[26] createTask's arguments, in its order
  ARGV[27] to ARGV[35] claimTask's ARGV[3] to ARGV[11] (its taskId and now are createTask's ARGV[1] and ARGV[8])
  Returns claimTask's reply when it claimed nothing (nothing changed: the caller acts on it as on
  claimTask's; CLAIMED_BEFORE names the task a re-sent message made, which createTask alone
  completes), else {'CLAIMED', active, quota checks due, <createTask's reply>...}.
  Emits: what createTask emits.
  @bounds-events KEYS[3]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include ownerQuota
  @include tokenBucket
  @include fieldWrites
  @include appendEvent
  @include storedArtifacts
  @include takeLease
  @include claimTask
  @include createTask
]]
local claim = __claimTask(
  { KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14] },
  { ARGV[1], ARGV[8], unpack(ARGV, 27, 35) })
if claim[1] ~= 'CLAIMED' then return claim end
local created = __createTask({ unpack(KEYS, 1, 7) }, { unpack(ARGV, 1, 26) })
for _, value in ipairs(created) do table.insert(claim, value) end
return claim
