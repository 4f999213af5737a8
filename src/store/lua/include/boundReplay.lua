--[[
  Bounds a task's replay buffer (its events stream) after a script appended to it, in that
  script: the append and the trim are one atomic step, so no reader ever sees the stream past
  its bound. Wrapped around every script marked @bounds-events (src/store/scripts.ts).
  The trim is exact (XTRIM MINID without `~`): the gateway must know the newest event it ever
  dropped, to tell a Last-Event-ID from inside the buffer (replayed exactly) from one older
  than it (answered with a snapshot). Each append drops about as many events as it added, so
  the exact trim costs a flag per entry in the stream's oldest node, not a rewrite.
  Task hash fields it keeps: eventsTrimmedThrough (id of the newest event dropped),
  eventsTrimmed (how many were dropped in all) and eventsBytes (bytes of the events the buffer
  holds: what was appended, less what was dropped).
  Bytes: past maxBytes the oldest events go as they would past maxEvents (the newest event always
  stays, however large), so one task of few but huge events is bounded in memory too, and a
  resume from before the buffer gets the same answer whichever bound dropped the events.
  Push: events after the oldest delivery cursor (a config's last settled event) stay, so a slow
  receiver loses nothing, up to holdMaxEvents events and holdMaxBytes bytes; past either they go, and a config whose next
  event went gets a task snapshot instead (pushNext). A config a 410 disabled holds nothing (its
  cursor is parked under another name, see pushSettle).
]]
local function __eventIdLess(a, b)
  local aMs, aSeq = string.match(a, '^(%d+)-(%d+)$')
  local bMs, bSeq = string.match(b, '^(%d+)-(%d+)$')
  aMs, bMs = tonumber(aMs), tonumber(bMs)
  if aMs ~= bMs then return aMs < bMs end
  return tonumber(aSeq) < tonumber(bSeq)
end

-- At most this many of the oldest events are read to find a cut: after the bound was lowered
-- (or many events aged out at once) the stream comes down by this much per append (bounded
-- work per call).
local __TRIM_READ_MAX = 1000
-- The same as a command argument: Redis turns a Lua number argument into text with snprintf, on every call.
local __TRIM_READ_MAX_TEXT = '1000'

-- Bytes of the oldest events through each id read while finding the cut, by id: every cut is
-- found by reading forward from the oldest event, so what the trim drops was read once already.
-- Reading a megabyte event into Lua costs Redis about a millisecond (a fresh allocation): the
-- drop's count reuses these sums instead of reading the dropped events a second time.
local __bytesThroughRead = {}

-- Notes the cumulative bytes through each of `entries`, read in order from the oldest event
-- (`before`: the bytes of the events before the first of them).
local function __noteRead(entries, before)
  local bytes = before
  for _, entry in ipairs(entries) do
    bytes = bytes + #entry[2][2]
    __bytesThroughRead[entry[1]] = bytes
  end
end

-- The id of the newest of the `excess` oldest events (capped at __TRIM_READ_MAX).
local function __cutByCount(eventsKey, excess)
  local oldest = redis.call('XRANGE', eventsKey, '-', '+', 'COUNT', math.min(excess, __TRIM_READ_MAX))
  __noteRead(oldest, 0)
  return oldest[#oldest][1]
end

-- The id of the newest of the oldest events that together hold at least `excess` bytes, never
-- the newest event of the stream (capped at __TRIM_READ_MAX events); nil when there is none.
-- Read in batches of 1, 2, 4 … 16 events: an append usually drops about one event, and a batch
-- read whole where one event would do copies that many events (of up to maxEventBytes each) per append.
local function __cutByBytes(eventsKey, excess, length)
  local readable = math.min(length - 1, __TRIM_READ_MAX)
  local through = nil
  local freed = 0
  local start = '-'
  local read = 0
  local batchSize = 1
  while freed < excess and read < readable do
    local batch = redis.call('XRANGE', eventsKey, start, '+', 'COUNT', math.min(batchSize, readable - read))
    batchSize = math.min(batchSize * 2, 16)
    if #batch == 0 then break end
    for _, entry in ipairs(batch) do
      freed = freed + #entry[2][2]
      through = entry[1]
      __bytesThroughRead[through] = freed
      read = read + 1
      if freed >= excess or read >= readable then break end
    end
    start = '(' .. through
  end
  return through
end

-- Bytes of the events up to `through` (they are among the oldest __TRIM_READ_MAX: every cut is),
-- from what finding the cut read when it read that far, else read now.
local function __bytesThrough(eventsKey, through)
  if __bytesThroughRead[through] ~= nil then return __bytesThroughRead[through] end
  local bytes = 0
  for _, entry in ipairs(redis.call('XRANGE', eventsKey, '-', through, 'COUNT', __TRIM_READ_MAX)) do bytes = bytes + #entry[2][2] end
  return bytes
end

-- `appended`: what the script just appended, counted by the wrapper (src/store/scripts.ts): its
-- events, their bytes and the newest one's id.
local function __boundReplay(taskKey, eventsKey, cursorsKey, maxEvents, maxAgeMs, holdMaxEvents, maxBytes, holdMaxBytes, appended)
  __bytesThroughRead = {}
  local added = appended.bytes
  local length = redis.call('XLEN', eventsKey)
  local bytes = redis.call('HINCRBY', taskKey, 'eventsBytes', added)
  local through = nil
  if maxEvents > 0 and length > maxEvents then through = __cutByCount(eventsKey, length - maxEvents) end
  if maxBytes > 0 and bytes > maxBytes then
    local byBytes = __cutByBytes(eventsKey, bytes - maxBytes, length)
    if byBytes ~= nil and (through == nil or __eventIdLess(through, byBytes)) then through = byBytes end
  end
  -- A stream that holds only what this script appended (a new task's) has nothing old enough.
  if maxAgeMs > 0 and length > appended.count then
    -- Stream ids come from the Redis clock, so the age cut does too: the id just appended is its
    -- time now (a script sees one clock: TIME would answer the same).
    local cutoffMs = tonumber(string.match(appended.lastId, '^(%d+)-')) - maxAgeMs
    -- Read forward from the oldest: XREVRANGE from the cutoff would walk the whole stream.
    if cutoffMs > 0 then
      local aged = redis.call('XRANGE', eventsKey, '-', '(' .. string.format('%d', cutoffMs) .. '-0', 'COUNT', __TRIM_READ_MAX_TEXT)
      __noteRead(aged, 0)
      local newestAged = aged[#aged]
      if newestAged and (through == nil or __eventIdLess(through, newestAged[1])) then through = newestAged[1] end
    end
  end
  if through == nil then return end
  local cursors = redis.call('HGETALL', cursorsKey)
  local hold = nil
  for i = 1, #cursors, 2 do
    if string.sub(cursors[i], 1, 2) == 'd:' and (hold == nil or __eventIdLess(cursors[i + 1], hold)) then hold = cursors[i + 1] end
  end
  if hold ~= nil and __eventIdLess(hold, through) then
    through = hold
    if holdMaxEvents > 0 and length > holdMaxEvents then
      local capped = __cutByCount(eventsKey, length - holdMaxEvents)
      if __eventIdLess(through, capped) then through = capped end
    end
    if holdMaxBytes > 0 and bytes > holdMaxBytes then
      local capped = __cutByBytes(eventsKey, bytes - holdMaxBytes, length)
      if capped ~= nil and __eventIdLess(through, capped) then through = capped end
    end
  end
  local droppedBytes = __bytesThrough(eventsKey, through)
  local ms, seq = string.match(through, '^(%d+)-(%d+)$')
  local dropped = redis.call('XTRIM', eventsKey, 'MINID', ms .. '-' .. string.format('%d', tonumber(seq) + 1))
  -- A hold at a cursor already dropped (or before the first event) drops nothing: nothing to record.
  if dropped > 0 then
    redis.call('HSET', taskKey, 'eventsTrimmedThrough', through)
    redis.call('HINCRBY', taskKey, 'eventsTrimmed', dropped)
    -- Never below zero: a task whose events were appended before the byte count existed holds more than it counted.
    if redis.call('HINCRBY', taskKey, 'eventsBytes', -droppedBytes) < 0 then redis.call('HSET', taskKey, 'eventsBytes', 0) end
    -- Push settles read it there (pushSettle): a delivery settled behind it is not chained on.
    if hold ~= nil then redis.call('HSET', cursorsKey, 'trimmedThrough', through) end
  end
end
