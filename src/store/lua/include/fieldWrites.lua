--[[
  A hash's field writes, gathered as a script goes and sent as one HSET and one HDEL
  (`@include fieldWrites`): every call a script makes costs Redis about as much as a small write
  does, and a script's path often sets a field here and another there. The suite reads the task
  hash's fields a script names through a variable named taskWrites (test/task-hash-fields.test.ts).
  A field is either set or cleared in one gathering, never both: the HDEL goes after the HSET.
]]
local function __fieldWrites()
  local writes = { sets = {}, clears = {} }
  function writes.set(field, value)
    -- A missing value would shift every later pair: refused, as an HSET of it would be.
    if value == nil then error('fieldWrites: no value for ' .. field) end
    writes.sets[#writes.sets + 1] = field
    writes.sets[#writes.sets + 1] = value
  end
  function writes.clear(field)
    writes.clears[#writes.clears + 1] = field
  end
  -- Sends what was gathered to `key`, and starts afresh.
  function writes.flush(key)
    if #writes.sets > 0 then redis.call('HSET', key, unpack(writes.sets)) end
    if #writes.clears > 0 then redis.call('HDEL', key, unpack(writes.clears)) end
    writes.sets, writes.clears = {}, {}
  end
  return writes
end
