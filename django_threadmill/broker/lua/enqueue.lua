-- enqueue.lua: store new tasks and make each ready, or delayed until its run_after.
-- KEYS[1]  P:t:        record prefix; each task id is appended (ids come from the client)
-- KEYS[2]  P:ready     zset: ready ids by (100 - priority) * 2^40 + seq
-- KEYS[3]  P:delayed   zset: delayed ids by due time in ms
-- KEYS[4]  P:seq       string: FIFO counter within a priority
-- KEYS[5]  P:wake      list: wake-up tokens for idle fetchers
-- ARGV[1]  wake_cap    most tokens kept in P:wake
-- ARGV[2..] per task, 5 values: id, payload (JSON, stored as is), priority,
--           run_after_ms ("" for none), enqueued_ms
-- Returns: the number of tasks stored.
-- Fence:   an id that exists already is skipped, never overwritten: ids are fresh uuids, so it
--          can only be a retry of a call whose reply was lost, which makes enqueue idempotent.
-- Clock:   redis.call("TIME") only, to decide ready or delayed.
local now = now_ms()

local count = (#ARGV - 1) / 5
local seq = redis.call("INCRBY", KEYS[4], count) - count
local stored = 0
local ready, delayed = {}, {}
for i = 2, #ARGV, 5 do
  local id, payload, priority = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  seq = seq + 1
  if redis.call("EXISTS", KEYS[1] .. id) == 0 then
    local run_after_ms = ARGV[i + 3]
    local score = (100 - priority) * 1099511627776 + seq
    redis.call("HSET", KEYS[1] .. id, "payload", payload, "state", "ready", "score", score,
      "token", 0, "enqueued_ms", ARGV[i + 4], "run_after_ms", run_after_ms, "nerrors", 0)
    if run_after_ms ~= "" and tonumber(run_after_ms) > now then
      delayed[#delayed + 1] = tonumber(run_after_ms)
      delayed[#delayed + 1] = id
    else
      ready[#ready + 1] = score
      ready[#ready + 1] = id
    end
    stored = stored + 1
  end
end
call_chunked("ZADD", KEYS[2], ready)
call_chunked("ZADD", KEYS[3], delayed)

local missing = tonumber(ARGV[1]) - redis.call("LLEN", KEYS[5])
for _ = 1, math.min(missing, stored) do
  redis.call("RPUSH", KEYS[5], 1)
end
return stored
