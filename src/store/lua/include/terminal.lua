--[[
  The terminal-state test, one definition for every script that needs it (`@include terminal`):
  a task in one of these states takes no more turns, messages or cancellations.
]]
local function __isTerminal(state)
  return state == 'TASK_STATE_COMPLETED' or state == 'TASK_STATE_FAILED' or state == 'TASK_STATE_CANCELED'
    or state == 'TASK_STATE_REJECTED'
end
