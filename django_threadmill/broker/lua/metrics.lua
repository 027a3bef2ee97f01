-- metrics.lua: add a worker's tally of finished attempts to a queue's counters and its done
-- index, and trim the index.
-- KEYS[1]  P:metrics            hash: lifetime counters and buckets per "<path>|<name>"
-- KEYS[2]  P:metrics:           prefix of the per-minute hashes; the Redis minute is appended
-- KEYS[3]  P:metrics:paths      set: task paths counted under their own name
-- KEYS[4]  P:stats              hash: lifetime outcome counters
-- KEYS[5]  P:done               zset: finished ids by finish time in ms
-- KEYS[6]  P:metrics-sent:<sender>  string: the number of the sender's last send counted here
-- ARGV[1]  cap            most task paths in KEYS[3]; later ones are counted as "other"
-- ARGV[2]  minute_ttl_ms  expiry of the minute hash
-- ARGV[3]  result_ttl_ms  ids finished longer ago leave P:done ("" keeps them)
-- ARGV[4]  number         this send's number, above any the sender sent before ("": a trim only)
-- ARGV[5]  sent_ttl_ms    expiry of KEYS[6]
-- ARGV[6..8] successful, failed, retry: amounts for KEYS[4]
-- ARGV[9]  g              groups of finished ids for KEYS[5], one per finish call; then per
--                         group: age_ms (how long before this call its outcomes were
--                         recorded, by the worker's monotonic clock), n, and n ids
-- ARGV[..]  then per task path: path, m, n, then m pairs for both hashes and n for KEYS[1] only
-- Returns: -1 if the send was counted already (sent again after its reply was lost): nothing
--          is done; else the number of counter fields skipped because they hold something
--          not a number (written by hand): a damaged field costs that field, not the others.
-- Fence:   KEYS[6]: a send numbered no higher than the sender's last one counted is skipped.
--          The worker tallies only outcomes finish.lua recorded.
-- Clock:   redis.call("TIME") only: the minute, the done index's scores (now - age_ms: one
--          clock, and the order the outcomes were recorded in) and its trim.
-- Cost:    one ZADD per 500 ids (call_chunked); a score is formatted once per group; a GET
--          and a SET of KEYS[6] per numbered send.
local number = tonumber(ARGV[4])
if number and (tonumber(redis.call("GET", KEYS[6])) or 0) >= number then
  return -1
end
local now = now_ms()
local skipped = 0
local function add(hash, field, amount)
  local added = redis.pcall("HINCRBY", hash, field, amount)
  if type(added) == "table" and added.err then
    skipped = skipped + 1
  end
end

-- The index first: a P:done of another type fails the call before any counter moves.
local finished = {}
local j = 10
for _ = 1, tonumber(ARGV[9]) do
  local score, n = tostring(now - tonumber(ARGV[j])), tonumber(ARGV[j + 1])
  for m = j + 2, j + 1 + n do
    finished[#finished + 1] = score
    finished[#finished + 1] = ARGV[m]
  end
  j = j + 2 + n
end
call_chunked("ZADD", KEYS[5], finished)
for i, outcome in ipairs({"successful", "failed", "retry"}) do
  if ARGV[5 + i] ~= "0" then
    add(KEYS[4], outcome, ARGV[5 + i])
  end
end
local minute = KEYS[2] .. math.floor(now / 60000)
local paths, cap = KEYS[3], tonumber(ARGV[1])
local first = j
local i = first
while i <= #ARGV do
  local path, m, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if redis.call("SISMEMBER", paths, path) == 0 then
    if redis.call("SCARD", paths) < cap then
      redis.call("SADD", paths, path)
    else
      path = "other"
    end
  end
  for j = i + 3, i + 1 + 2 * (m + n), 2 do
    local name = path .. "|" .. ARGV[j]
    add(KEYS[1], name, ARGV[j + 1])
    if j < i + 3 + 2 * m then
      add(minute, name, ARGV[j + 1])
    end
  end
  i = i + 3 + 2 * (m + n)
end
if i > first then
  redis.call("PEXPIRE", minute, ARGV[2])
end
-- Trim the index once per send, never per task: ids whose records have expired.
if ARGV[3] ~= "" then
  redis.call("ZREMRANGEBYSCORE", KEYS[5], "-inf", now - tonumber(ARGV[3]))
end
-- Last: a call that failed part-way is not taken for counted when sent again.
if number then
  redis.call("SET", KEYS[6], number, "PX", ARGV[5])
end
return skipped
