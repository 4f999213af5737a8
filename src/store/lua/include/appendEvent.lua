--[[
  Appends one event to a task's replay buffer (its events stream) and announces it, one
  definition for every script that does (`@include appendEvent`). Subscribers get
  "<entry id>\n<event JSON>" on the task's event channel; on a Redis Cluster the loader makes
  the PUBLISH an SPUBLISH (src/store/scripts.ts). The buffer's bound is applied once, after the
  whole script, by the @bounds-events wrapper (include/boundReplay.lua).
  `published` is what subscribers get when it differs from what the buffer keeps (createTask
  keeps its event without the first message, which the history holds); nil: the same.
  `trailer`: nil, or a function of the entry id whose string (if any) rides in the same message
  after a second newline, for one listener only (finishTurn's answer to a waiting SendMessage):
  event JSON never holds a raw newline, so every other subscriber cuts it off.
  Every event is an observable change of the task, so it also bumps the task's generation
  (`taskKey`'s 'generation', docs/task-generations.md) in the same script call: a reader never
  sees a new state under an old generation.
  Every script that appends is wrapped in the replay bound (@bounds-events, src/store/scripts.ts),
  whose `__appended` counts what this appends: the events and their bytes, for the bound.
  Returns the entry id.
]]
local function __appendEvent(taskKey, eventsKey, channel, stored, published, trailer)
  redis.call('HINCRBY', taskKey, 'generation', 1)
  local id = redis.call('XADD', eventsKey, '*', 'r', stored)
  __appended.count = __appended.count + 1
  __appended.bytes = __appended.bytes + #stored
  local message = id .. '\n' .. (published or stored)
  local extra = trailer and trailer(id)
  if extra then message = message .. '\n' .. extra end
  redis.call('PUBLISH', channel, message)
  return id
end
