-- cancel.lua: fail a task that is still waiting (ready or delayed) with a cancellation error.
-- KEYS[1]  P:t:        record prefix; the id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:delayed   zset: delayed ids by due time in ms
-- KEYS[4]  P:done      zset: finished ids by finish time in ms
-- ARGV[1]  id
-- ARGV[2]  error_json    the Cancelled error, built by the client
-- ARGV[3]  finished_ms   wall clock of the request, for display
-- ARGV[4]  result_ttl_ms finished records expire after this ("" keeps them forever)
-- Returns: "cancelled", or the state the task was in (nothing changes), or "missing".
-- Fence:   state must be "ready"; a reserved or running attempt is never cancelled here.
-- Clock:   redis.call("TIME") only, for the done index.
local key = KEYS[1] .. ARGV[1]
local f, refused = record_in_state(key, "ready", "nerrors")
if not f then
  return refused
end
local attempt = (tonumber(f[2]) or 0) + 1
redis.call("ZREM", KEYS[2], ARGV[1])
redis.call("ZREM", KEYS[3], ARGV[1])
redis.call("HSET", key, "state", "failed", "error:" .. attempt, ARGV[2], "nerrors", attempt,
  "finished_ms", ARGV[3])
redis.call("ZADD", KEYS[4], now_ms(), ARGV[1])
if ARGV[4] ~= "" then
  redis.call("PEXPIRE", key, ARGV[4])
end
return "cancelled"
