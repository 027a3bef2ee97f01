-- create_workflow.lua: store a new workflow's hash with the expiry of its launch, in one call.
-- KEYS[1]  W         hash: one workflow; its fields are listed in broker/workflows.py
-- ARGV[1]  ttl_ms    the launch's expiry: mark.lua lifts it once the first steps are stored
-- ARGV[2..] the hash's fields and values, in pairs
-- Returns: 1
-- Fence:   none needed: the id is new. The two writes are one call, so a hash never stays
--          without its expiry: a launch interrupted there would leave its workflow open for
--          good. A MULTI/EXEC did it before, which redis-py's cluster client refuses (6.0,
--          6.1) or mishandles after a connection error (to 7.1).
-- Types:   one key: a W of another type fails the call (WRONGTYPE) before anything is written.
-- Clock:   none: created_ms is among the fields, read from Redis TIME by the caller.
-- Cost:    the fields are written 500 per HSET (call_chunked): Lua unpacks at most about 8,000
--          values, and one HSET of them all failed a group of 2,000 members.
local ttl_ms = table.remove(ARGV, 1)
call_chunked("HSET", KEYS[1], ARGV)
redis.call("PEXPIRE", KEYS[1], ttl_ms)
return 1
