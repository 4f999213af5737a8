--[[
  One page of an owner's tasks, newest status timestamp first (spec 3.1.4), with the total.
  Reads each task's state (to filter, and to drop entries of tasks past their retention):
  single-instance Redis only (task keys are computed here), the supported deployment for
  ListTasks today.
  KEYS[1] owner (or owner context) index zset
  ARGV[1] key prefix   ARGV[2] page size   ARGV[3] cursor score ('' = first page)
  ARGV[4] cursor task id   ARGV[5] state filter ('' = any)   ARGV[6] status timestamp after (ms, '' = none)
  Returns {total, nextCursorScore|'', nextCursorId|'', taskId...}
]]
local minScore = '-inf'
if ARGV[6] ~= '' then minScore = '(' .. ARGV[6] end
local pageSize = tonumber(ARGV[2])
local cursorScore = nil
if ARGV[3] ~= '' then cursorScore = tonumber(ARGV[3]) end
local entries = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', minScore, 'WITHSCORES')
local total = 0
local page = {}
local lastScore, lastId = '', ''
local more = false
for i = 1, #entries, 2 do
  local taskId = entries[i]
  local score = tonumber(entries[i + 1])
  local state = redis.call('HGET', ARGV[1] .. ':{' .. taskId .. '}:task', 'state')
  -- A task past its retention is gone: drop its index entry instead of counting it.
  if not state then redis.call('ZREM', KEYS[1], taskId) end
  local matches = state and (ARGV[5] == '' or state == ARGV[5])
  if matches then
    total = total + 1
    local after = cursorScore == nil or score < cursorScore or (score == cursorScore and taskId < ARGV[4])
    if after then
      if #page < pageSize then
        table.insert(page, taskId)
        lastScore, lastId = entries[i + 1], taskId
      else
        more = true
      end
    end
  end
end
if not more then lastScore, lastId = '', '' end
local result = {total, lastScore, lastId}
for _, taskId in ipairs(page) do table.insert(result, taskId) end
return result
