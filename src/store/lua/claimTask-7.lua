--[[
  Step 1 of creating a task, in the owner's slot ({o:<ownerKey>}, docs/redis-slots.md): claims
  the message's idempotency key for the task id, an active-task slot and the storage quota, and
  indexes the task. createTask (step 2, the task's own slot) follows; a crash between the two
  leaves a claim that a re-sent message finds (CLAIMED_BEFORE) and completes with the same id.
  Index entries are hints: ListTasks re-checks each task, and drops one whose task is gone.
  KEYS[1] idempotency key   KEYS[2] owner's active tasks (zset)   KEYS[3] owner's storage quota (hash)
  KEYS[4] owner's quota checks (zset)   KEYS[5] owner task index   KEYS[6] owner context index
  KEYS[7] owner's stored-bytes bucket (limits.storedBytesPerSecond; include/tokenBucket.lua)
  ARGV[1] taskId   ARGV[2] now (ms)   ARGV[3] idempotency TTL (s)   ARGV[4] most active tasks (0 = no cap)
  ARGV[5] bytes the task charges (0 = not charged)   ARGV[6] most bytes stored (0 = no quota)
  ARGV[7] most tasks stored (0 = no quota)   ARGV[8] when to first look whether the task still exists (ms)
  ARGV[9] the stored-bytes rate (bytes per second; 0 = not taken here)   ARGV[10] its burst
  ARGV[11] the bytes the message stores (a cost over the burst costs the whole bucket)
  The message's bytes are taken from the bucket when the task is claimed, in this call (one round
  trip less than a take of their own), and only then: a re-sent message, a refusal, or a claim
  retried after a quota sweep is never charged twice.
  Returns {'CLAIMED_BEFORE', taskId} (the key was claimed before: that task is the message's)
        | {'BYTE_RATE', ms until the bucket holds the bytes} | {'TOO_MANY_ACTIVE', count}
        | {'OVER_QUOTA', 'bytes' | 'tasks', stored, earliest check (ms) | ''} (nothing changed)
        | {'CLAIMED', the owner's tasks queued or running now (this one included), quota checks due}
  @include ownerQuota
  @include tokenBucket
  @include claimTask
]]
return __claimTask(KEYS, ARGV)
