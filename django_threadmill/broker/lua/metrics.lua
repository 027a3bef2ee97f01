-- metrics.lua: add a worker's tally of finished attempts to a queue's counters and its done
-- index, and trim the index.
-- KEYS[1]  P:metrics            hash: lifetime counters and buckets per "<path>|<name>"
-- KEYS[2]  P:metrics:           prefix of the per-minute hashes; the Redis minute is appended
-- KEYS[3]  P:metrics:paths      zset: task paths counted under their own name, by the Redis
--                               time in ms a send last counted one (to the hour; a set, as
--                               earlier versions kept it, is converted)
-- KEYS[4]  P:stats              hash: lifetime outcome counters
-- KEYS[5]  P:done               zset: finished ids by finish time in ms
-- KEYS[6]  P:metrics-sent:<sender>  string: the number of the sender's last send counted here
-- ARGV[1]  cap            most task paths in KEYS[3]; later ones are counted as "other"
-- ARGV[2]  minute_ttl_ms  expiry of the minute hash
-- ARGV[3]  result_ttl_ms  ids finished longer ago leave P:done, the oldest first, at most
--                         TRIM_IDS more than the send adds ("" keeps them)
-- ARGV[4]  number         this send's number, above any the sender sent before ("": a trim only)
-- ARGV[5]  sent_ttl_ms    expiry of KEYS[6]
-- ARGV[6]  path_ttl_ms    a path no send counted for this long leaves KEYS[3], and its fields
--                         leave KEYS[1] (its series end; the minute hashes expire on their own);
--                         "" forgets none (a trim of a part of an earlier shard count)
-- ARGV[7..9] successful, failed, retry: amounts for KEYS[4]
-- ARGV[10] g              groups of finished ids for KEYS[5], one per finish call; then per
--                         group: age_ms (how long before this call its outcomes were
--                         recorded, by the worker's monotonic clock), n, and n ids
-- ARGV[..]  then per task path: path, m, n, then m pairs for both hashes and n for KEYS[1] only
-- Returns: {skipped, left}. skipped: -1 if the send was counted already (sent again after its
--          reply was lost): nothing is done; else the number of counter fields skipped because
--          they hold something not a number (written by hand): a damaged field costs that
--          field, not the others. left: the expired ids the trim left in KEYS[5] for the next
--          call (0 when ARGV[3] is "" or the send was counted already). A worker of an earlier
--          version, which read one number, runs its own copy of this script (by its SHA).
-- Fence:   KEYS[6]: a send numbered no higher than the sender's last one counted is skipped.
--          The worker tallies only outcomes finish.lua recorded.
-- Types:   P:done and P:metrics:paths are checked (one TYPE each) before the first write: one
--          of another type (for P:metrics:paths, neither a zset nor the set of earlier versions)
--          fails the call with nothing counted, so the send kept and sent again counts once.
--          The hashes are written through pcall: a field there that is no number, or a hash of
--          another type, costs its fields, not the call.
-- Clock:   redis.call("TIME") only: the minute, the done index's scores (now - age_ms: one
--          clock, and the order the outcomes were recorded in), its trim and the paths' ages.
-- Cost:    one ZADD per 500 ids (call_chunked); a score is formatted once per group; a GET
--          and a SET of KEYS[6] per numbered send; two TYPEs and a ZRANGEBYSCORE of KEYS[3]
--          per send, a ZSCORE per task path in it (a ZADD when new or last written an hour
--          ago), an HKEYS of KEYS[1] when a path is forgotten: nothing per task. The trim: a
--          ZCOUNT of KEYS[5], and a ZREMRANGEBYRANK of at most TRIM_IDS ids (about a
--          millisecond) more than the send adds, however many expired: the next sends take
--          the rest (a reaper's pass calls again while left is above 0, a bounded number of
--          times: worker/reaper.py).
local number = tonumber(ARGV[4])
if number and (tonumber(redis.call("GET", KEYS[6])) or 0) >= number then
  return {-1, 0}
end
local paths, cap = KEYS[3], tonumber(ARGV[1])
-- A path's time is written again once an hour (ms), not at every send: a read per path and send.
local SEEN_EVERY_MS = 3600 * 1000
-- Most expired ids a send trims from P:done beyond as many as it adds (ids): removing a million
-- in one call held Redis for seconds (docs/observability.md, Metrics and the done index).
local TRIM_IDS = 1000
local kind = redis.call("TYPE", paths).ok  -- asked once: a set or a zset is ours
local legacy = kind == "set"  -- as earlier versions kept the paths
local wrong = wrong_kind(KEYS[5], "zset")
if not wrong and kind ~= "none" and kind ~= "zset" and not legacy then
  wrong = "WRONGTYPE Operation against a key holding the wrong kind of value in " .. paths
end
if wrong then
  return redis.error_reply(wrong)
end
local now = now_ms()
if legacy then  -- each path counts as seen now
  local seen = {}
  for _, path in ipairs(redis.call("SMEMBERS", paths)) do
    seen[#seen + 1] = now
    seen[#seen + 1] = path
  end
  redis.call("DEL", paths)
  call_chunked("ZADD", paths, seen)
end
local skipped = 0
local function add(hash, field, amount)
  local added = redis.pcall("HINCRBY", hash, field, amount)
  if type(added) == "table" and added.err then
    skipped = skipped + 1
  end
end

-- Paths unseen for path_ttl_ms give their label back, with their lifetime series: a renamed or
-- generated task path does not hold one of the cap's labels, nor export stale series, for good.
local forgotten = {}
if ARGV[6] ~= "" then
  forgotten = redis.call("ZRANGEBYSCORE", paths, "-inf", now - tonumber(ARGV[6]))
end
if #forgotten > 0 then
  call_chunked("ZREM", paths, forgotten)
  local gone = {}
  for _, path in ipairs(forgotten) do
    gone[path] = true
  end
  local fields = redis.pcall("HKEYS", KEYS[1])
  if not fields.err then
    local dropped = {}
    for _, name in ipairs(fields) do
      local path = string.match(name, "^(.*)|[^|]*$")
      if path and gone[path] then
        dropped[#dropped + 1] = name
      end
    end
    call_chunked("HDEL", KEYS[1], dropped)
  end
end

local finished = {}
local j = 11
for _ = 1, tonumber(ARGV[10]) do
  local score, n = tostring(now - tonumber(ARGV[j])), tonumber(ARGV[j + 1])
  for m = j + 2, j + 1 + n do
    finished[#finished + 1] = score
    finished[#finished + 1] = ARGV[m]
  end
  j = j + 2 + n
end
call_chunked("ZADD", KEYS[5], finished)
for i, outcome in ipairs({"successful", "failed", "retry"}) do
  if ARGV[6 + i] ~= "0" then
    add(KEYS[4], outcome, ARGV[6 + i])
  end
end
local minute = KEYS[2] .. math.floor(now / 60000)
local first = j
local i = first
while i <= #ARGV do
  local path, m, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local seen = redis.call("ZSCORE", paths, path)
  if not seen and redis.call("ZCARD", paths) >= cap then
    path = "other"
  elseif not seen or now - tonumber(seen) >= SEEN_EVERY_MS then
    redis.call("ZADD", paths, now, path)
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
-- Trim the index once per send, never per task: ids whose records have expired, the oldest
-- first (the lowest ranks). As many more as the send adds, so a part finishing more than
-- TRIM_IDS tasks a second is trimmed as fast as it fills.
local left = 0
if ARGV[3] ~= "" then
  local expired = redis.call("ZCOUNT", KEYS[5], "-inf", now - tonumber(ARGV[3]))
  local trimmed = math.min(expired, TRIM_IDS + #finished / 2)
  if trimmed > 0 then
    redis.call("ZREMRANGEBYRANK", KEYS[5], 0, trimmed - 1)
  end
  left = expired - trimmed
end
-- Last: a call that failed part-way is not taken for counted when sent again.
if number then
  redis.call("SET", KEYS[6], number, "PX", ARGV[5])
end
return {skipped, left}
