-- start.lua: mark reserved tasks as running (the batched start notice).
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[3]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[4]  P:ready     zset: ready ids, looked at only when a damaged record's lease is dropped
-- KEYS[5]  P:wake      list: wake-up tokens; one is pushed when that frees a slot (ARGV[3])
-- ARGV[1]  lease_ttl_ms   running lease length
-- ARGV[2]  worker_id      appended to the record's workers, one line per attempt
-- ARGV[3]  wake_on_free   "1" for a queue with a concurrency limit (finish.lua says why)
-- ARGV[4..] per task, 3 values: id, token, started_ms (the worker's wall clock, for display)
-- Returns: {1 started | 0 stale | 3 damaged | 5 missing, ...} in argument order; a damaged
--          record (one that cannot be read) is set aside and its lease dropped; a missing one
--          (Redis lost its data, or it was deleted or expired) changes nothing.
-- Fence:   state must be "reserved" and token must match; otherwise nothing changes.
-- Clock:   redis.call("TIME") only, for the lease deadline.
local now = now_ms()
local deadline = tostring(now + tonumber(ARGV[1]))  -- formatted once per call

local reply = {}
local leased, dropped = {}, {}
local fields = {}  -- HSET arguments, reused for every task: entries past the count are stale
for i = 4, #ARGV, 3 do
  local id, token = ARGV[i], ARGV[i + 1]
  local key = KEYS[1] .. id
  local f, problem = read_record(key, "state", "token", "nerrors")
  if not f then
    set_aside(KEYS[3], id, now, "start", problem)
    dropped[#dropped + 1] = id
    reply[#reply + 1] = 3
  elseif f[1] == "reserved" and f[2] == token then
    fields[1], fields[2] = "state", "running"
    local n = add_attempt(fields, 2, key, f[3], ARGV[2], ARGV[i + 2])
    redis.call("HSET", key, unpack(fields, 1, n))
    leased[#leased + 1] = deadline
    leased[#leased + 1] = id
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = f[1] and 0 or 5  -- a record has a state; no state, no record
  end
end
call_chunked("ZADD", KEYS[2], leased)
call_chunked("ZREM", KEYS[2], dropped)
if slot_freed(ARGV[3], #dropped, KEYS[4]) then
  wake_one(KEYS[5])
end
return reply
