-- release.lua: hand reserved, never-started tasks back to ready with their original place.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[4]  P:wake      list: wake-up tokens for idle fetchers
-- KEYS[5]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- ARGV[1..] per task, 2 values: id, token
-- Returns: {tasks released, records set aside (they cannot be read; their leases dropped)}.
-- Fence:   state must be "reserved" and token must match; a started or reaped task stays.
--          A released record keeps no token: a late call of the old lease is stale.
-- Clock:   redis.call("TIME") only, and only to date a record set aside.
local released, ready, dropped = 0, {}, {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local key = KEYS[1] .. id
  local f, problem = read_record(key, "state", "token", "score")
  if not f then
    set_aside(KEYS[5], id, now_ms(), "release", problem)
    dropped[#dropped + 1] = id
  elseif f[1] == "reserved" and f[2] == ARGV[i + 1] then
    redis.call("HSET", key, "state", "ready", "token", "")
    ready[#ready + 1] = ready_score(f[3])
    ready[#ready + 1] = id
    dropped[#dropped + 1] = id
    released = released + 1
  end
end
call_chunked("ZADD", KEYS[2], ready)
call_chunked("ZREM", KEYS[3], dropped)
if released > 0 and redis.call("LLEN", KEYS[4]) == 0 then
  redis.call("RPUSH", KEYS[4], 1)
end
return {released, #dropped - released}
