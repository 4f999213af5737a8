--[[
  A follow-up message's claim and accept in one call, on a single Redis only: claimTurn-3.lua (the
  owner's slot) and then acceptMessage-10.lua (the task's slot), where the two steps cost a read of
  the task's state, then two round trips and two script calls. Its keys span two slots, so a
  Cluster never runs it (src/store/scripts.ts refuses it there): there the steps stay apart.
  Whether the owner has a say is decided here, from the task as this call finds it: a message that
  resumes the task (input or auth required, no assignment's question pending) takes an active
  slot, and a charged one its bytes of the quota. A refused claim still lets the accept's first
  checks run (a re-sent message is a duplicate even at the quota), and changes nothing.
  @single-redis
  KEYS[1] to KEYS[10] acceptMessage's keys, in its order   KEYS[11] to KEYS[13] claimTurn's keys, in its order
  ARGV[1] to ARGV[23] acceptMessage's arguments, in its order (ARGV[9], the owner's refusal, is this call's to set)
  ARGV[24] most active tasks (0 = no cap)   ARGV[25] bytes the message charges (0 = not charged)
  ARGV[26] most bytes stored (0 = no quota)   ARGV[27] when to first look whether the task still exists (ms)
  Returns {n, the task's contextId ('' when it has none), <claimTurn's reply: n values; n = 0 when no
    claim was needed>, <acceptMessage's reply>...}
  Emits: what acceptMessage emits.
  @bounds-events KEYS[5]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include terminal
  @include fieldWrites
  @include appendEvent
  @include storedArtifacts
  @include takeLease
  @include ownerQuota
  @include claimTurn
  @include acceptMessage
]]
-- The accept's own reads (include/acceptMessage.lua), made once: the claim writes none of them.
local read = redis.call('HMGET', KEYS[1], unpack(__ACCEPT_READS))
-- Another owner's task costs what a missing one does: this one read, nothing claimed (invariant 10).
if read[1] ~= ARGV[1] then return { 0, '', 'NOT_FOUND' } end
if ARGV[2] ~= '' and ARGV[2] ~= read[2] then return { 0, read[2], 'CONTEXT_MISMATCH' } end
local claim = {}
local resumes = (read[3] == 'TASK_STATE_INPUT_REQUIRED' or read[3] == 'TASK_STATE_AUTH_REQUIRED') and not read[4]
if resumes or tonumber(ARGV[25]) > 0 then
  claim = __claimTurn({ KEYS[11], KEYS[12], KEYS[13] },
    { ARGV[8], ARGV[5], ARGV[24], resumes and '1' or '', ARGV[25], ARGV[26], ARGV[27] })
end
local acceptArgs = { unpack(ARGV, 1, 23) }
if claim[1] ~= nil and claim[1] ~= 'CLAIMED' then acceptArgs[9] = '1' end
local accepted = __acceptMessage({ unpack(KEYS, 1, 10) }, acceptArgs, read)
local reply = { #claim, read[2] or '' }
for _, value in ipairs(claim) do table.insert(reply, value) end
for _, value in ipairs(accepted) do table.insert(reply, value) end
return reply
