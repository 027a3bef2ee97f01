-- common.lua: helpers prepended to every script by broker/scripts.py (no keys, no state).

-- The one clock: Redis server time in milliseconds.
local function now_ms()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Record that `worker_id` began an attempt at `started_ms` (the worker's wall clock, for display):
-- append it to the newline-joined workers and keep the first start as started_ms.
local function record_attempt(key, workers, first_started_ms, worker_id, started_ms)
  local joined = (workers and workers ~= "") and (workers .. "\n" .. worker_id) or worker_id
  redis.call("HSET", key, "workers", joined, "attempted_ms", started_ms)
  if not first_started_ms or first_started_ms == "" then
    redis.call("HSET", key, "started_ms", started_ms)
  end
end
