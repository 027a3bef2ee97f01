-- finish.lua: record the outcome of attempts: success, failure, or failure with a retry.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[3]  P:done      zset: finished ids by finish time in ms (the admin's index)
-- KEYS[4]  P:delayed   zset: delayed ids by due time in ms (retries wait here)
-- KEYS[5]  P:stats     hash: counters, bumped once per call
-- KEYS[6]  P:wake      list: wake-up tokens, so idle fetchers see a scheduled retry
-- KEYS[6]  P:wake      list: wake-up tokens; one is pushed when a retry was scheduled
-- ARGV[1]  worker_id      recorded if the attempt's start notice never went out ("" for none)
-- ARGV[2]  result_ttl_ms  finished records expire after this ("" keeps them forever)
-- ARGV[3..] per task, 7 values: id, token, outcome ("successful" | "failed" | "retry"),
--           value (result JSON, or error JSON), started_ms, finished_ms (worker wall clock,
--           for display), retry_delay_ms (used by "retry" only)
-- Returns: {1 recorded | 0 stale, ...} in argument order.
-- Fence:   state must be "reserved" or "running" and token must match; a late or duplicate
--          call, or one for a reaped task, changes nothing and returns 0.
-- Clock:   redis.call("TIME") only, for the done index and the retry due time.
local now = now_ms()
local ttl = ARGV[2]
local counts = {successful = 0, failed = 0, retry = 0}

local reply = {}
for i = 3, #ARGV, 7 do
  local id, token, outcome, value = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local key = KEYS[1] .. id
  local f = redis.call("HMGET", key, "state", "token", "workers", "started_ms", "nerrors")
  if (f[1] == "reserved" or f[1] == "running") and f[2] == token then
    if f[1] == "reserved" and ARGV[1] ~= "" then
      record_attempt(key, f[3], f[4], ARGV[1], ARGV[i + 4])
    end
    redis.call("ZREM", KEYS[2], id)
    if outcome == "successful" then
      redis.call("HSET", key, "state", "successful", "result", value, "finished_ms", ARGV[i + 5])
    else
      local attempt = tonumber(f[5] or 0) + 1
      redis.call("HSET", key, "error:" .. attempt, value, "nerrors", attempt)
      if outcome == "retry" then
        redis.call("HSET", key, "state", "ready")
        redis.call("ZADD", KEYS[4], now + tonumber(ARGV[i + 6]), id)
      else
        redis.call("HSET", key, "state", "failed", "finished_ms", ARGV[i + 5])
      end
    end
    if outcome ~= "retry" then
      redis.call("ZADD", KEYS[3], now, id)
      if ttl ~= "" then
        redis.call("PEXPIRE", key, ttl)
      end
    end
    counts[outcome] = counts[outcome] + 1
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end

for outcome, n in pairs(counts) do
  if n > 0 then
    redis.call("HINCRBY", KEYS[5], outcome, n)
  end
end
-- An idle fetcher learns a retry's due time only from acquire: wake one, once per call.
if counts.retry > 0 and redis.call("LLEN", KEYS[6]) == 0 then
  redis.call("RPUSH", KEYS[6], 1)
end
if counts.retry > 0 and redis.call("LLEN", KEYS[6]) == 0 then
  redis.call("RPUSH", KEYS[6], 1)
end
-- Trim the index once per call, never per task: ids whose records have expired.
if ttl ~= "" then
  redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", now - tonumber(ttl))
end
return reply
