--[[
  A task's events after an id, and what the replay bound has dropped so far, read at one moment:
  a trim between two separate reads could hide a gap from the reader (src/events/task-feed.ts).
  One script call, where a MULTI of two reads cost the client four commands and a pipeline.
  KEYS[1] task hash   KEYS[2] events
  ARGV[1] XRANGE start ('-', or '(' and the id to read after)   ARGV[2] most events read
  Returns {eventsTrimmedThrough or nil, eventsTrimmed or nil, the XRANGE entries}
]]
local trimmed = redis.call('HMGET', KEYS[1], 'eventsTrimmedThrough', 'eventsTrimmed')
return {trimmed[1], trimmed[2], redis.call('XRANGE', KEYS[2], ARGV[1], '+', 'COUNT', ARGV[2])}
