-- server_seen.lua: note which Redis server holds the backend's data, and say since when: a
-- restart or a failover let lapse the leases live workers could not renew meanwhile, and a
-- reaper waits until they could (docs/lifecycle.md, After an outage or a stall).
-- KEYS[1]  {alias}:server  string: "<identity> <ms the reapers first saw it>" ("0" for a
--                          server seen from the first pass ever)
-- ARGV[1]  identity        the server's INFO "<run_id>:<master_replid>" (a cluster's: its
--                          primaries' that answer, sorted, joined by ","): run_id new at every
--                          start, the replication id at every promotion (a failback's too)
-- Returns: ms since a reaper first saw `identity` here: 0 when the note named another server
--          (this call notes the new one, dated now) or is dated ahead of the Redis clock (the
--          clock stepped back since: how long ago the server was first seen is unknown, so it
--          is dated now again), and the Redis time itself when the key was missing, malformed
--          or of another type (a first pass ever, or a Redis that kept no data, and so no
--          lease either: it notes `identity` as seen from ever, "0").
-- Fence:   none: a reaper calls this once its read found the note naming another server,
--          dated ahead of the clock, missing or malformed (broker/server_identity.py); the
--          note is read again here, so of two reapers that saw a change together the second
--          finds it noted.
-- Clock:   redis.call("TIME") only.
local now = now_ms()
local stored = redis.pcall("GET", KEYS[1])  -- another type (an error) reads as missing
local seen, since = nil, nil
if type(stored) == "string" then
  seen, since = string.match(stored, "^(%S+) (%d+)$")
end
if seen == ARGV[1] and tonumber(since) <= now then
  return now - tonumber(since)
end
local first = seen and now or 0  -- a change or a step back is dated now; the first from ever
redis.call("SET", KEYS[1], ARGV[1] .. " " .. first)
return now - first
