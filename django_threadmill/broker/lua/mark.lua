-- mark.lua: steps of a workflow are stored: mark them enqueued, so no later drain enqueues them
-- again, and say why each was recorded as not run meanwhile (docs/workflows.md, Cancel).
-- KEYS[1]  W         hash: one workflow; its fields are listed in broker/workflows.py
-- ARGV     the indices of the steps stored
-- Returns: {exists, then per step in ARGV order why it was recorded as not run (x:i), or false};
--          exists is 1, or 0 when W is gone (nothing is written then: its steps run for nobody).
-- Fence:   none needed: marking a step twice writes the same field. A launch creates W with a
--          TTL (create_workflow): an open W is made persistent here, so a launch interrupted
--          before it stored a step leaves no workflow open for good, and one whose steps are
--          stored keeps it (docs/workflows.md, Semantics). A W that ended
--          keeps its expiry (result_ttl).
-- Types:   one key: a W of another type fails the call (WRONGTYPE) before anything is written.
-- Clock:   none.
local w = KEYS[1]
local status = redis.call("HGET", w, "status")
if not status then
  return {0}
end
if status == "open" then
  redis.call("PERSIST", w)
end
local reply = {1}
for i, step in ipairs(ARGV) do
  redis.call("HSET", w, "e:" .. step, "enqueued")
  reply[i + 1] = redis.call("HGET", w, "x:" .. step)
end
return reply
