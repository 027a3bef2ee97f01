-- release.lua: hand reserved, never-started tasks back to ready with their original place.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[4]  P:wake      list: wake-up tokens for idle fetchers
-- ARGV[1..] per task, 2 values: id, token
-- Returns: the number of tasks released.
-- Fence:   state must be "reserved" and token must match; a started or reaped task stays.
-- Clock:   not used.
local released = 0
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local key = KEYS[1] .. id
  local f = redis.call("HMGET", key, "state", "token", "score")
  if f[1] == "reserved" and f[2] == ARGV[i + 1] then
    redis.call("HSET", key, "state", "ready")
    redis.call("ZADD", KEYS[2], f[3], id)
    redis.call("ZREM", KEYS[3], id)
    released = released + 1
  end
end
if released > 0 and redis.call("LLEN", KEYS[4]) == 0 then
  redis.call("RPUSH", KEYS[4], 1)
end
return released
