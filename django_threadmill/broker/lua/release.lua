-- release.lua: hand reserved, never-started tasks back to ready with their original place.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[4]  P:wake      list: wake-up tokens for idle fetchers
-- KEYS[5]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[6]  P:rate      string: when the rate limit's next reservation turn comes (acquire.lua)
-- ARGV[1]  wake_on_free  "1" for a queue with a concurrency limit: a record set aside gives
--                        back its slot, and a fetcher is woken for it
-- ARGV[2]  interval_us   µs between two turns under the queue's rate ("" for no rate)
-- ARGV[3..] per task, 2 values: id, token
-- Returns: {tasks released, records set aside (they cannot be read; their leases dropped)}.
-- Fence:   state must be "reserved" and token must match; a started or reaped task stays.
--          A released record keeps no token: a late call of the old lease is stale.
-- Rate:    each task reserved under a rate took a turn of the queue's reservation bucket; a
--          released one gives it back (a stop's hand-back under "1/h" held its task an hour).
--          Starts keep their own bucket (pace.lua), so no more tasks start per period.
-- Types:   a key of another type fails the call (WRONGTYPE) before any task moves, but P:wake
--          and P:rate: then the tasks are back in P:ready, no idle fetcher was woken for them
--          and no turn given back.
-- Clock:   redis.call("TIME") only, to date a record set aside and to give a turn back.
local released, ready, dropped = 0, {}, {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local key = KEYS[1] .. id
  local f, problem = read_record(key, "state", "token", "score")
  if not f then
    set_aside(KEYS[5], id, now_ms(), "release", problem)
    dropped[#dropped + 1] = id
  elseif f[1] == "reserved" and f[2] == ARGV[i + 1] then
    ready[#ready + 1] = ready_score(f[3])
    ready[#ready + 1] = id
    dropped[#dropped + 1] = id
    released = released + 1
  end
end
-- Into P:ready before any record changes: when that key holds another type the ZADD fails
-- with the tasks still reserved and leased, for the reaper once the key is deleted.
call_chunked("ZADD", KEYS[2], ready)
for i = 2, #ready, 2 do
  redis.call("HSET", KEYS[1] .. ready[i], "state", "ready", "token", "")
end
call_chunked("ZREM", KEYS[3], dropped)
if released > 0 or slot_freed(ARGV[1], #dropped, KEYS[2]) then
  wake_one(KEYS[4])
end
give_back_turns(KEYS[6], ARGV[2], released)
return {released, #dropped - released}
