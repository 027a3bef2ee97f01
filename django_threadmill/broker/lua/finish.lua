-- finish.lua: record the outcome of attempts: success, failure, or failure with a retry.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[3]  P:done      zset: finished ids by finish time in ms (the admin's index)
-- KEYS[4]  P:delayed   zset: delayed ids by due time in ms (retries wait here)
-- KEYS[5]  P:stats     hash: counters, bumped once per call
-- KEYS[6]  P:wake      list: wake-up tokens; one is pushed when a retry was scheduled
-- KEYS[7]  P:metrics            hash: lifetime counters and buckets per "<path>|<name>"
-- KEYS[8]  P:metrics:<minute>   hash: the same for the current minute; expires
-- KEYS[9]  P:metrics:paths      set: task paths counted under their own name
-- KEYS[10] P:u:        unique key prefix; a finished task's `unique` digest is appended
-- KEYS[11] P:ready     zset: ready ids, looked at only when ARGV[6] is "1"
-- KEYS[12] P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- ARGV[1]  worker_id      recorded if the attempt's start notice never went out; "" means the
--                         reaper settles, which wins only while the lease is still expired
-- ARGV[2]  result_ttl_ms  finished records expire after this ("" keeps them forever)
-- ARGV[3]  count          number of tasks
-- ARGV[4]  path_cap       most task paths in KEYS[9]; later ones are counted as "other"
-- ARGV[5]  minute_ttl_ms  expiry of KEYS[8]
-- ARGV[6]  wake_on_free   "1" for a queue with a concurrency limit: a freed slot wakes a
--                         fetcher, since acquire held its ready tasks back without a baton
-- ARGV[7..] per task, 7 values: id, token, outcome ("successful" | "failed" | "retry"),
--           value (result JSON, or error JSON), started_ms, finished_ms (worker wall clock,
--           for display), retry_delay_ms (used by "retry" only);
--           then the metric increments of all of them (common.lua add_metrics)
-- Returns: per task in argument order: 1 recorded; 2 already recorded under this token (a
--          duplicate, or a retried call whose first try landed); 0 stale: settled or held
--          under another owner (reaped, released, reserved again, cancelled); 3 damaged: the
--          record cannot be read, so it is set aside and its lease dropped. The metrics are
--          added only if every task was recorded; otherwise the client sends those itself.
-- Fence:   state must be "reserved" or "running" and token must match; anything else changes
--          nothing. The reaper's call is also stale when the worker renewed the lease after
--          the reaper read it, and what the reaper records keeps no token. A unique key is
--          released only while it still names the task.
-- Clock:   redis.call("TIME") only, for the done index and the retry due time.
-- Cost:    per task one HMGET, one HSET, one PEXPIREAT; lease, index and metric updates are per
--          call (one HINCRBY per metric field, whatever the number of tasks).
local now = now_ms()
local finished_at = tostring(now)  -- the done index's score, formatted once per call
local ttl = ARGV[2]
-- When this call's finished records expire, formatted once: PEXPIREAT is replicated as sent,
-- where Redis rewrites each PEXPIRE into a PEXPIREAT for its replicas and AOF.
local expires_at = ttl ~= "" and tostring(now + tonumber(ttl)) or nil
local counts = {successful = 0, failed = 0, retry = 0}
local reaping = ARGV[1] == ""
local recorded = 0

local reply = {}
local unleased, finished = {}, {}
local fields = {}  -- HSET arguments, reused for every task: entries past n are stale
local last = 6 + 7 * tonumber(ARGV[3])
for i = 7, last, 7 do
  local id, token, outcome, value = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local key = KEYS[1] .. id
  local f, problem = read_record(key, "state", "token", "nerrors", "unique")
  if not f then
    set_aside(KEYS[12], id, now, "finish", problem)
    f = {}
  end
  local live = f[2] == token and (f[1] == "reserved" or f[1] == "running")
  if live and reaping then
    local deadline = redis.call("ZSCORE", KEYS[2], id)
    live = deadline ~= false and tonumber(deadline) <= now
  end
  if live then
    local n = 0
    if f[1] == "reserved" and ARGV[1] ~= "" then
      n = add_attempt(fields, n, key, f[3], ARGV[1], ARGV[i + 4])
    end
    if outcome == "successful" then
      fields[n + 1], fields[n + 2] = "state", "successful"
      fields[n + 3], fields[n + 4] = "result", value
      n = n + 4
    else
      local attempt = (tonumber(f[3]) or 0) + 1
      fields[n + 1], fields[n + 2] = "error:" .. attempt, value
      fields[n + 3], fields[n + 4] = "nerrors", attempt
      fields[n + 5], fields[n + 6] = "state", outcome == "retry" and "ready" or "failed"
      n = n + 6
    end
    if reaping then
      -- The reaper settles with the attempt's own token; clearing it makes the worker's late
      -- call read as another owner's settlement, not as its own outcome recorded before.
      fields[n + 1], fields[n + 2] = "token", ""
      n = n + 2
    end
    if outcome == "retry" then
      redis.call("ZADD", KEYS[4], now + tonumber(ARGV[i + 6]), id)
    else
      fields[n + 1], fields[n + 2] = "finished_ms", ARGV[i + 5]
      n = n + 2
      finished[#finished + 1] = finished_at
      finished[#finished + 1] = id
    end
    redis.call("HSET", key, unpack(fields, 1, n))
    if outcome ~= "retry" and expires_at then
      redis.call("PEXPIREAT", key, expires_at)
    end
    -- pcall: a unique key of another type names no task; it is left for enqueue to replace.
    if f[4] and outcome ~= "retry" and redis.pcall("GET", KEYS[10] .. f[4]) == id then
      redis.call("DEL", KEYS[10] .. f[4])
    end
    unleased[#unleased + 1] = id
    counts[outcome] = counts[outcome] + 1
    recorded = recorded + 1
    reply[#reply + 1] = 1
  elseif problem then
    unleased[#unleased + 1] = id
    reply[#reply + 1] = 3
  elseif f[2] == token and (f[1] == "successful" or f[1] == "failed" or f[1] == "ready") then
    reply[#reply + 1] = 2  -- only this lease's outcome leaves its token on a settled record
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
if recorded == #reply then
  add_metrics(KEYS[7], KEYS[8], KEYS[9], ARGV, last + 1, tonumber(ARGV[4]), ARGV[5])
end
-- An idle fetcher learns a retry's due time only from acquire: wake one, once per call.
local freed = ARGV[6] == "1" and #unleased > 0 and redis.call("ZCARD", KEYS[11]) > 0
if (counts.retry > 0 or freed) and redis.call("LLEN", KEYS[6]) == 0 then
  redis.call("RPUSH", KEYS[6], 1)
end
-- Trim the index once per call, never per task: ids whose records have expired.
if ttl ~= "" then
  redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", now - tonumber(ttl))
end
return reply
