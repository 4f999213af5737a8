--[[
  Appends one event to a task's replay buffer (its events stream) and announces it, one
  definition for every script that does (`@include appendEvent`). Subscribers get
  "<entry id>\n<event JSON>" on the task's event channel; on a Redis Cluster the loader makes
  the PUBLISH an SPUBLISH (src/store/scripts.ts). The buffer's bound is applied once, after the
  whole script, by the @bounds-events wrapper (include/boundReplay.lua).
  `published` is what subscribers get when it differs from what the buffer keeps (createTask
  keeps its event without the first message, which the history holds); nil: the same.
  Returns the entry id.
]]
local function __appendEvent(eventsKey, channel, stored, published)
  local id = redis.call('XADD', eventsKey, '*', 'r', stored)
  redis.call('PUBLISH', channel, id .. '\n' .. (published or stored))
  return id
end
