--[[
  End a turn, fenced by the lease generation. Results (artifacts, agent message, turn record)
  are stored before the final status event is published. If follow-up messages queued up
  while the turn ran and the turn did not fail or get canceled, they become the next turn's
  input at once and the lease is kept; otherwise the lease is released.
  The task's slot only: the owner's indexes follow, and the task leaves the owner's active set
  when no turn follows (src/store/owner-index.ts).
  KEYS[1] task hash   KEYS[2] events   KEYS[3] history   KEYS[4] inbox   KEYS[5] lease   KEYS[6] turns
  KEYS[7] messageIds   KEYS[8] steps
  KEYS[9] emitted digests of the turn's runs (see appendEvents): the turn is over, so they go
  KEYS[10] pending artifact chunks (see appendEvents): new artifacts are the whole snapshot, so they go
  ARGV[1] lease generation   ARGV[2] event channel   ARGV[3] now (ms)   ARGV[4] now (ISO)   ARGV[5] taskId
  ARGV[6] final state   ARGV[7] final status JSON   ARGV[8] agent message JSON ('' = none)
  ARGV[9] turn record JSON   ARGV[10] artifacts JSON, at most one segment ('' = unchanged: the pending chunks stay and are read
    with the snapshot; larger artifacts were written before this call, in segments, see include/storedArtifacts.lua)   ARGV[11] final event JSON
  ARGV[12] retention of a terminal task (s)
  ARGV[13] outcome JSON of a terminal turn: {verified, method?, evidence?} ('' = leave as is)
  ARGV[14] tokens the turn's model calls consumed, "<input> <output>" ('' = none): added to the task's totals
  ARGV[15] '1' when the turn stopped because a new message interrupted it (input policy interrupt):
    it is over (its record says canceled) and the next turn starts at once with the queued input
  ARGV[16] a direct reply (spec 3.1.1): the Message the client gets instead of the task ('' = none). It
    is one only when the client cannot hold the task yet: the task's first turn, nothing announced
    but its creation and start, no message waiting; it is then kept as the task's 'directReply'
  ARGV[17] the final event JSON for a direct reply (the final status update, marked as one)
  ARGV[18] "<emit scope> <sequence> <digest>" of the run's last event ('' = none): sent before that
    event's append had answered, this ends the turn only if that event was stored (appendEvents records
    a digest only then, and a refused append stops every later one); otherwise it changes nothing and
    returns {'UNSTORED'}
  ARGV[19] the run's last event JSON, carried by this call instead of an append of its own ('' = none;
    src/runtime/turn-write-queue.ts): counted against the output bounds as appendEvents counts it, and
    appended before anything else this call appends. Its status, if any, is not stored: the final one is.
  then, last, the output bounds of that event (include/outputBound.lua: artifact id, append flag, three bounds)
  Returns {'STALE'} | {'UNSTORED'} | {'LIMIT', setting, bound, would-be bytes} (the carried event past an
    output bound: nothing changed) | {'DONE', eventId, 'DIRECT' | ''} | {'NEXT', turn, turnInputStart, trace JSON | '', message JSON...}
    (the trace: the context of the request whose message waited first, see acceptMessage's inboxTrace)
  Emits: the final status update (with the task after it when a SendMessage waits for it, see
  include/appendEvent.lua's trailer), or a TASK_STATE_WORKING status update for the next turn (for an
  interrupted turn, with metadata.cancellation {stage "stopped", scope "turn", turn}).
  @once: a call re-sent after a lost connection returns the first reply (src/store/scripts.ts).
  @bounds-events KEYS[2]: the replay buffer is trimmed after the append, in this script (src/store/scripts.ts).
  @include fence
  @include outputBound
  @include fieldWrites
  @include terminal
  @include appendEvent
  @include storedArtifacts
  @include taskSnapshot
]]
__takeOutputBounds()
if __leaseIsStale() then return {'STALE'} end
if ARGV[18] ~= '' then
  local scope, seq, digest = string.match(ARGV[18], '^(%S+) (%d+) (%S+)$')
  local emitted = redis.call('HMGET', KEYS[9], 'scope', seq)
  if emitted[1] ~= scope or emitted[2] ~= digest then return {'UNSTORED'} end
end
-- The carried event goes first, as its own append would have: the direct-reply check below counts it.
if ARGV[19] ~= '' then
  local refused = __chargeOutput(KEYS[1], #ARGV[19])
  if refused then return refused end
  __appendEvent(KEYS[1], KEYS[2], ARGV[2], ARGV[19])
end
-- Read once, before this script writes any of them (turn is incremented, inboxTrace and
-- answerHistory deleted, all after this); the inbox is not touched until it is drained below.
local read = redis.call('HMGET', KEYS[1], 'turn', 'eventsTrimmed', 'cancelRequestedAtMs', 'inboxTrace', 'contextId', 'answerHistory')
local turn = read[1]
local cancelRequested = read[3]
local inboxLength = redis.call('LLEN', KEYS[4])
-- Decided before the inbox is drained: a message waiting means the client holds the task.
-- Events the replay bound dropped were announced all the same: they count.
local direct = ARGV[16] ~= '' and turn == '1' and inboxLength == 0 and not cancelRequested
  and redis.call('XLEN', KEYS[2]) + tonumber(read[2] or '0') <= 2
redis.call('HSET', KEYS[6], turn, ARGV[9])
redis.call('DEL', KEYS[9])
-- The task hash's fields go in one HSET and one HDEL where the script's path ends (include/fieldWrites.lua).
local taskWrites = __fieldWrites()
taskWrites.clear('interruptTurn')
taskWrites.clear('interruptRequestedAtMs')
taskWrites.clear('inboxTrace')
-- The artifacts are the whole snapshot given here: no segment and no pending chunk is left.
local artifactsWhole = ARGV[10] ~= ''
if artifactsWhole then
  __dropSegments(KEYS[1])
  taskWrites.set('artifacts', ARGV[10])
  redis.call('DEL', KEYS[10])
  taskWrites.clear('artifactChunkBytes')
end
if ARGV[14] ~= '' then
  local inputTokens, outputTokens = string.match(ARGV[14], '^(%d+) (%d+)$')
  redis.call('HINCRBY', KEYS[1], 'usageInputTokens', inputTokens)
  redis.call('HINCRBY', KEYS[1], 'usageOutputTokens', outputTokens)
end
if ARGV[8] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[8]) end
local state = ARGV[6]
local interrupted = ARGV[15] == '1'
local continues = (state == 'TASK_STATE_COMPLETED' or state == 'TASK_STATE_INPUT_REQUIRED'
  or state == 'TASK_STATE_AUTH_REQUIRED' or interrupted) and inboxLength > 0
  and not cancelRequested
local queued = {}
-- Where the queued messages start in the history (the next turn's input, when one follows).
local start = 0
if inboxLength > 0 then
  queued = redis.call('LRANGE', KEYS[4], 0, -1)
  redis.call('DEL', KEYS[4])
  start = redis.call('LLEN', KEYS[3])
end
local inboxTrace = read[4] or ''
for _, message in ipairs(queued) do redis.call('RPUSH', KEYS[3], message) end
local contextId = read[5]
if continues then
  local nextTurn = redis.call('HINCRBY', KEYS[1], 'turn', 1)
  local status = '{"state":"TASK_STATE_WORKING","timestamp":' .. cjson.encode(ARGV[4]) .. '}'
  redis.call('HSET', KEYS[1], 'status', status, 'state', 'TASK_STATE_WORKING', 'updatedAtMs', ARGV[3],
    'turnInputStart', start, 'turnAttempts', 0, 'turnHandBacks', 0, 'turnBudgetSpent', 0, unpack(taskWrites.sets))
  redis.call('HDEL', KEYS[1], unpack(taskWrites.clears))
  local stopped = ''
  if interrupted then
    stopped = ',"metadata":{"cancellation":{"stage":"stopped","scope":"turn","turn":' .. turn
      .. ',"reason":"interrupted by a new message","at":' .. cjson.encode(ARGV[4]) .. '}}'
  end
  local event = '{"statusUpdate":{"taskId":' .. cjson.encode(ARGV[5]) .. ',"contextId":' .. cjson.encode(contextId)
    .. ',"status":' .. status .. stopped .. '}}'
  local id = __appendEvent(KEYS[1], KEYS[2], ARGV[2], event)
  local result = {'NEXT', nextTurn, start, inboxTrace}
  for _, message in ipairs(queued) do table.insert(result, message) end
  return result
end
taskWrites.set('status', ARGV[7])
taskWrites.set('state', state)
taskWrites.set('updatedAtMs', ARGV[3])
if cancelRequested and state ~= 'TASK_STATE_INPUT_REQUIRED'
  and state ~= 'TASK_STATE_AUTH_REQUIRED' then
  -- A cancel was asked for: record which terminal state won (the cancel, or the turn's own end).
  taskWrites.set('cancelOutcome', state)
  if state == 'TASK_STATE_CANCELED' then taskWrites.set('cancelStoppedAtMs', ARGV[3]) end
end
local terminal = __isTerminal(state)
if terminal then
  taskWrites.set('finishedAtMs', ARGV[3])
  if ARGV[13] ~= '' then taskWrites.set('outcome', ARGV[13]) end
end
redis.call('DEL', KEYS[5])
-- The turn is over: an adapter still running (one that ignored its abort signal past the
-- deadline) must not be able to write after the final status. (The fence above found the
-- generation at ARGV[1].)
taskWrites.set('leaseGeneration', tonumber(ARGV[1]) + 1)
local final = ARGV[11]
if direct then
  taskWrites.set('directReply', ARGV[16])
  final = ARGV[17]
end
-- The SendMessage that created the task may be waiting for this (createTask's answerHistory):
-- the task rides in the final event's message, so it needs no read of its own. A large task is
-- left to that read: the message goes to every gateway that subscribes to the pattern.
local waiting = read[6]
local answer = nil
if waiting then taskWrites.clear('answerHistory') end
taskWrites.flush(KEYS[1])
if terminal then
  -- A finished task and its replay buffer live for the retention period, then go together (the
  -- pending chunks too, unless they went above).
  local kept = {KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[7], KEYS[8]}
  if not artifactsWhole then kept[#kept + 1] = KEYS[10] end
  for _, key in ipairs(kept) do redis.call('EXPIRE', key, ARGV[12]) end
end
-- Artifacts already past the bound are weighed, not built and encoded only to be dropped (a
-- whole snapshot given here weighs what it is: nothing else is left of them).
local chunksKey = KEYS[10]
if artifactsWhole then chunksKey = false end
if waiting and (artifactsWhole and #ARGV[10] or __artifactsWeight(KEYS[1])) <= 65536 then
  answer = function(eventId)
    local snapshot = cjson.encode(__taskSnapshot(KEYS[1], KEYS[3], KEYS[2], chunksKey, nil, tonumber(waiting), eventId))
    if #snapshot <= 65536 then return snapshot end
    return nil
  end
end
local id = __appendEvent(KEYS[1], KEYS[2], ARGV[2], final, nil, answer)
return {'DONE', id, direct and 'DIRECT' or ''}
