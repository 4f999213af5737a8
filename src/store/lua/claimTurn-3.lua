--[[
  Step 1 of accepting a follow-up message, in the owner's slot, when it needs the owner's say:
  an active-task slot for a message that resumes the task (input or auth required), and the
  bytes it charges to the storage quota. acceptMessage (the task's slot) follows. If it then
  takes nothing, the caller gives the charge back (quotaRefund); an active entry of a task that
  did not resume is dropped by the next claim at the cap or by the reconciler (it re-checks the task).
  KEYS[1] owner's active tasks (zset)   KEYS[2] owner's storage quota (hash)   KEYS[3] owner's quota checks (zset)
  ARGV[1] taskId   ARGV[2] now (ms)   ARGV[3] most active tasks (0 = no cap)
  ARGV[4] '1' when the message resumes the task   ARGV[5] bytes it charges (0 = not charged)
  ARGV[6] most bytes stored (0 = no quota)   ARGV[7] when to first look whether the task still exists (ms)
  Returns {'TOO_MANY_ACTIVE', count} | {'OVER_QUOTA', 'bytes', stored, earliest check (ms) | ''} (nothing changed)
        | {'CLAIMED', the owner's tasks queued or running now, 1 when this call added the task's active entry}
  @include ownerQuota
  @include claimTurn
]]
return __claimTurn(KEYS, ARGV)
