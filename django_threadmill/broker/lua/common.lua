-- common.lua: helpers prepended to every script by broker/scripts.py (no keys, no state).

-- The one clock: Redis server time in milliseconds.
local function now_ms()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Run `command key items...` in chunks that stay under Lua's argument limit: one call per
-- thousand items instead of one per task (ZADD takes score/member pairs, so chunks stay even).
local function call_chunked(command, key, items)
  for i = 1, #items, 1000 do
    redis.call(command, key, unpack(items, i, math.min(i + 999, #items)))
  end
end

-- Append to `fields` (HSET arguments) that `worker_id` began an attempt at `started_ms` (the
-- worker's wall clock, for display): one more line in workers; the first start stays started_ms.
local function add_attempt(fields, workers, first_started_ms, worker_id, started_ms)
  local joined = (workers and workers ~= "") and (workers .. "\n" .. worker_id) or worker_id
  fields[#fields + 1] = "workers"
  fields[#fields + 1] = joined
  fields[#fields + 1] = "attempted_ms"
  fields[#fields + 1] = started_ms
  if not first_started_ms or first_started_ms == "" then
    fields[#fields + 1] = "started_ms"
    fields[#fields + 1] = started_ms
  end
end
