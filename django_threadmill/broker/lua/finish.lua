-- finish.lua: record the outcome of attempts: success, failure, or failure with a retry.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[3]  P:done      zset: finished ids by finish time in ms (the admin's index)
-- KEYS[4]  P:delayed   zset: delayed ids by due time in ms (retries wait here)
-- KEYS[5]  P:stats     hash: counters, bumped once per call
-- KEYS[6]  P:wake      list: wake-up tokens; one is pushed when a retry was scheduled
-- ARGV[1]  worker_id      recorded if the attempt's start notice never went out; "" means the
--                         reaper settles, which wins only while the lease is still expired
-- ARGV[2]  result_ttl_ms  finished records expire after this ("" keeps them forever)
-- ARGV[3..] per task, 7 values: id, token, outcome ("successful" | "failed" | "retry"),
--           value (result JSON, or error JSON), started_ms, finished_ms (worker wall clock,
--           for display), retry_delay_ms (used by "retry" only)
-- Returns: {1 recorded | 0 stale, ...} in argument order.
-- Fence:   state must be "reserved" or "running" and token must match; a late or duplicate
--          call, or one for a reaped task, changes nothing and returns 0. The reaper's call is
--          also stale when the worker renewed the lease after the reaper read it.
-- Clock:   redis.call("TIME") only, for the done index and the retry due time.
-- Cost:    per task one HMGET, one HSET, one PEXPIRE; lease and index updates are per call.
local now = now_ms()
local ttl = ARGV[2]
local counts = {successful = 0, failed = 0, retry = 0}
local reaping = ARGV[1] == ""

local reply = {}
local unleased, finished = {}, {}
for i = 3, #ARGV, 7 do
  local id, token, outcome, value = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local key = KEYS[1] .. id
  local f = redis.call("HMGET", key, "state", "token", "workers", "started_ms", "nerrors")
  local live = f[2] == token and (f[1] == "reserved" or f[1] == "running")
  if live and reaping then
    local deadline = redis.call("ZSCORE", KEYS[2], id)
    live = deadline ~= false and tonumber(deadline) <= now
  end
  if live then
    local fields = {}
    if f[1] == "reserved" and ARGV[1] ~= "" then
      add_attempt(fields, f[3], f[4], ARGV[1], ARGV[i + 4])
    end
    local n = #fields
    if outcome == "successful" then
      fields[n + 1], fields[n + 2] = "state", "successful"
      fields[n + 3], fields[n + 4] = "result", value
    else
      local attempt = (tonumber(f[5]) or 0) + 1
      fields[n + 1], fields[n + 2] = "error:" .. attempt, value
      fields[n + 3], fields[n + 4] = "nerrors", attempt
      fields[n + 5], fields[n + 6] = "state", outcome == "retry" and "ready" or "failed"
    end
    if outcome == "retry" then
      redis.call("ZADD", KEYS[4], now + tonumber(ARGV[i + 6]), id)
    else
      n = #fields
      fields[n + 1], fields[n + 2] = "finished_ms", ARGV[i + 5]
      finished[#finished + 1] = now
      finished[#finished + 1] = id
    end
    redis.call("HSET", key, unpack(fields))
    if outcome ~= "retry" and ttl ~= "" then
      redis.call("PEXPIRE", key, ttl)
    end
    unleased[#unleased + 1] = id
    counts[outcome] = counts[outcome] + 1
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end
call_chunked("ZREM", KEYS[2], unleased)
call_chunked("ZADD", KEYS[3], finished)

for outcome, n in pairs(counts) do
  if n > 0 then
    redis.call("HINCRBY", KEYS[5], outcome, n)
  end
end
-- An idle fetcher learns a retry's due time only from acquire: wake one, once per call.
if counts.retry > 0 and redis.call("LLEN", KEYS[6]) == 0 then
  redis.call("RPUSH", KEYS[6], 1)
end
-- Trim the index once per call, never per task: ids whose records have expired.
if ttl ~= "" then
  redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", now - tonumber(ttl))
end
return reply
