-- requeue.lua: give a failed task a new attempt: same id, history kept, back in its place.
-- KEYS[1]  P:t:        record prefix; the id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:done      zset: finished ids by finish time in ms
-- KEYS[4]  P:wake      list: wake-up tokens for idle fetchers
-- ARGV[1]  id
-- Returns: "requeued", or the state the task was in (nothing changes), or "missing".
-- Fence:   state must be "failed"; the record stops expiring (nothing pending expires).
-- Clock:   not used.
local key = KEYS[1] .. ARGV[1]
local f, refused = record_in_state(key, "failed", "score")
if not f then
  return refused
end
redis.call("PERSIST", key)
redis.call("HSET", key, "state", "ready")
redis.call("HDEL", key, "finished_ms")
redis.call("ZREM", KEYS[3], ARGV[1])
redis.call("ZADD", KEYS[2], f[2], ARGV[1])
if redis.call("LLEN", KEYS[4]) == 0 then
  redis.call("RPUSH", KEYS[4], 1)
end
return "requeued"
