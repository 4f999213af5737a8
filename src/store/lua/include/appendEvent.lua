--[[
  Appends one event to a task's replay buffer (its events stream) and announces it, one
  definition for every script that does (`@include appendEvent`). Subscribers get
  "<entry id>\n<event JSON>" on the task's event channel; on a Redis Cluster the loader makes
  the PUBLISH an SPUBLISH (src/store/scripts.ts). The buffer's bound is applied once, after the
  whole script, by the @bounds-events wrapper (include/boundReplay.lua).
  `published` is what subscribers get when it differs from what the buffer keeps (createTask
  keeps its event without the first message, which the history holds); nil: the same; false:
  announced by its id alone, as a large event is (below), whatever the size of what is kept.
  `trailer`: nil, or a function of the entry id whose string (if any) rides in the same message
  after a second newline, for one listener only (finishTurn's answer to a waiting SendMessage):
  event JSON never holds a raw newline, so every other subscriber cuts it off.
  Every event is an observable change of the task, so it also bumps the task's generation
  (`taskKey`'s 'generation', docs/task-generations.md) in the same script call: a reader never
  sees a new state under an old generation.
  Every script that appends is wrapped in the replay bound (@bounds-events, src/store/scripts.ts),
  whose `__appended` counts what this appends: the events, their bytes and the newest id, for the bound.
  An event stored whole as more than __ANNOUNCE_WHOLE_MAX bytes (a large artifact update) is
  announced by its entry id alone, no newline: a gateway that watches the task reads it from
  the buffer (src/events/hub.ts), the others receive a few bytes instead of a megabyte each.
  Building and sending the whole message was two more copies of the payload per call, and every
  gateway's pattern subscription received it whether or not anyone there watched the task.
  Returns the entry id.
]]
local __ANNOUNCE_WHOLE_MAX = 65536
local function __appendEvent(taskKey, eventsKey, channel, stored, published, trailer)
  -- '1', not 1: Redis turns a Lua number argument into text with snprintf, a cost of its own per call.
  redis.call('HINCRBY', taskKey, 'generation', '1')
  local id = redis.call('XADD', eventsKey, '*', 'r', stored)
  __appended.count = __appended.count + 1
  __appended.bytes = __appended.bytes + #stored
  __appended.lastId = id
  if published == false or (published == nil and trailer == nil and #stored > __ANNOUNCE_WHOLE_MAX) then
    redis.call('PUBLISH', channel, id)
    return id
  end
  local message = id .. '\n' .. (published or stored)
  local extra = trailer and trailer(id)
  if extra then message = message .. '\n' .. extra end
  redis.call('PUBLISH', channel, message)
  return id
end
