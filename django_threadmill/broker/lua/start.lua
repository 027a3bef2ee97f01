-- start.lua: mark reserved tasks as running (the batched start notice).
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- ARGV[1]  lease_ttl_ms   running lease length
-- ARGV[2]  worker_id      appended to the record's workers, one line per attempt
-- ARGV[3..] per task, 3 values: id, token, started_ms (the worker's wall clock, for display)
-- Returns: {1 started | 0 stale, ...} in argument order.
-- Fence:   state must be "reserved" and token must match; otherwise nothing changes.
-- Clock:   redis.call("TIME") only, for the lease deadline.
local deadline = now_ms() + tonumber(ARGV[1])

local reply = {}
local leased = {}
for i = 3, #ARGV, 3 do
  local id, token = ARGV[i], ARGV[i + 1]
  local key = KEYS[1] .. id
  local f = redis.call("HMGET", key, "state", "token", "workers", "started_ms")
  if f[1] == "reserved" and f[2] == token then
    local fields = {"state", "running"}
    add_attempt(fields, f[3], f[4], ARGV[2], ARGV[i + 2])
    redis.call("HSET", key, unpack(fields))
    leased[#leased + 1] = deadline
    leased[#leased + 1] = id
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end
call_chunked("ZADD", KEYS[2], leased)
return reply
