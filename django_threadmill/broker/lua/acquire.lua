-- acquire.lua: promote due delayed tasks, then reserve up to `count` ready tasks.
-- KEYS[1]  P:t:        record prefix; popped ids are appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:delayed   zset: delayed ids by due time in ms
-- KEYS[4]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[5]  P:wake      list: wake-up tokens for idle fetchers
-- ARGV[1]  count           most tasks to reserve
-- ARGV[2]  reserve_ttl_ms  reservation lease length
-- ARGV[3]  promote_limit   most due delayed tasks moved to ready per call
-- Returns: {next_due_in_ms (-1 when nothing is delayed),
--           {id, token, payload, workers, enqueued_ms, started_ms, {error_json...}}...}
-- Fence:   bumps each reserved task's token; ids without a ready record are dropped.
--          Per task: one HMGET and one HSET; the lease ZADD is one call per batch.
-- Clock:   redis.call("TIME") only.
local now = now_ms()

local due = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now, "LIMIT", 0, tonumber(ARGV[3]))
local promoted = {}
for _, id in ipairs(due) do
  local score = redis.call("HGET", KEYS[1] .. id, "score")
  if score then
    -- A score that is not a number was written by hand: run the task as priority 0 rather
    -- than fail every acquire of the queue.
    promoted[#promoted + 1] = tonumber(score) or 100 * 1099511627776
    promoted[#promoted + 1] = id
  end
end
call_chunked("ZADD", KEYS[2], promoted)
call_chunked("ZREM", KEYS[3], due)

local reply = {-1}
local deadline = now + tonumber(ARGV[2])
local leased = {}
local popped = redis.call("ZPOPMIN", KEYS[2], tonumber(ARGV[1]))
for i = 1, #popped, 2 do
  local id = popped[i]
  local key = KEYS[1] .. id
  local f = redis.call("HMGET", key, "state", "token", "payload", "workers", "enqueued_ms",
    "started_ms", "nerrors")
  if f[1] == "ready" then
    local token = (tonumber(f[2]) or 0) + 1
    redis.call("HSET", key, "state", "reserved", "token", token)
    leased[#leased + 1] = deadline
    leased[#leased + 1] = id
    local errors = {}
    for n = 1, tonumber(f[7]) or 0 do
      errors[n] = redis.call("HGET", key, "error:" .. n) or ""
    end
    reply[#reply + 1] = {id, token, f[3], f[4] or "", f[5] or "", f[6] or "", errors}
  end
end
call_chunked("ZADD", KEYS[4], leased)

local next_due = redis.call("ZRANGE", KEYS[3], 0, 0, "WITHSCORES")
if next_due[2] then
  reply[1] = math.max(0, tonumber(next_due[2]) - now)
end
-- Pass the baton: tasks are left, so make sure one more idle fetcher wakes up.
if redis.call("ZCARD", KEYS[2]) > 0 and redis.call("LLEN", KEYS[5]) == 0 then
  redis.call("RPUSH", KEYS[5], 1)
end
return reply
