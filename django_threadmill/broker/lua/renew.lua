-- renew.lua: push the lease deadlines of every task one worker process holds in this queue.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[3]  P:workers   zset: worker ids by last renewal in ms (shown in the admin)
-- KEYS[4]  P:held      hash: worker id -> number of tasks it held at its last renewal
-- KEYS[5]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[6]  P:threads   hash: worker id -> its live worker threads at its last renewal
-- KEYS[7]  P:ready     zset: ready ids, looked at only when a damaged record's lease is dropped
-- KEYS[8]  P:wake      list: wake-up tokens; one is pushed when that frees a slot (ARGV[5])
-- ARGV[1]  lease_ttl_ms   new lease length from now
-- ARGV[2]  worker_id      the renewing process
-- ARGV[3]  forget_ms      workers silent for longer than this are dropped from P:workers
-- ARGV[4]  threads        the process's live worker threads (the pool floats)
-- ARGV[5]  wake_on_free   "1" for a queue with a concurrency limit (finish.lua says why)
-- ARGV[6..] per task, 2 values: id, token
-- Returns: the ids whose lease is lost (reaped, released, reserved again under another token,
--          or its record cannot be read: set aside, lease dropped); an attempt this token already
--          finished is neither renewed nor reported: "successful", "failed", or "ready" from a
--          retry (finish.lua keeps the token on the outcomes its worker writes; the reaper,
--          release and acquire clear or replace it).
-- Fence:   state must be "reserved" or "running" and token must match.
-- Clock:   redis.call("TIME") only.
local now = now_ms()
local deadline = now + tonumber(ARGV[1])

local lost = {}
local held, dropped = 0, 0
for i = 6, #ARGV, 2 do
  local id = ARGV[i]
  local f, problem = read_record(KEYS[1] .. id, "state", "token")
  local mine = f and f[2] == ARGV[i + 1]
  if not f then
    set_aside(KEYS[5], id, now, "renew", problem)
    redis.call("ZREM", KEYS[2], id)
    dropped = dropped + 1
    lost[#lost + 1] = id
  elseif mine and (f[1] == "reserved" or f[1] == "running") then
    redis.call("ZADD", KEYS[2], "XX", deadline, id)
    held = held + 1
  elseif not (mine and (f[1] == "successful" or f[1] == "failed" or f[1] == "ready")) then
    lost[#lost + 1] = id
  end
end
if slot_freed(ARGV[5], dropped, KEYS[7]) then
  wake_one(KEYS[8])
end

redis.call("ZADD", KEYS[3], now, ARGV[2])
redis.call("HSET", KEYS[4], ARGV[2], held)
redis.call("HSET", KEYS[6], ARGV[2], ARGV[4])
local silent = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now - tonumber(ARGV[3]), "LIMIT", 0, 10)
for _, worker_id in ipairs(silent) do
  redis.call("ZREM", KEYS[3], worker_id)
  redis.call("HDEL", KEYS[4], worker_id)
  redis.call("HDEL", KEYS[6], worker_id)
end
return lost
