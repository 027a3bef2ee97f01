-- reap.lua: settle expired leases: reservations go back to ready, running ones are reported.
-- KEYS[1]  P:t:        record prefix; each expired id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[4]  P:wake      list: wake-up tokens for idle fetchers
-- ARGV[1]  limit       most expired leases looked at
-- ARGV[2]  dry_run     "1" reports without changing anything
-- Returns: {{id...} reservations released (or that would be),
--           {{id, token, payload, workers, deadline_ms, {error_json...}}...} expired running
--           attempts, which the client settles through finish.lua with that token}.
-- Fence:   a running attempt is only reported; finish.lua's token check lets one settler win.
-- Clock:   redis.call("TIME") only.
local now = now_ms()
local dry_run = ARGV[2] == "1"
local expired = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now, "WITHSCORES", "LIMIT", 0,
  tonumber(ARGV[1]))

local released, running = {}, {}
for i = 1, #expired, 2 do
  local id, deadline = expired[i], expired[i + 1]
  local key = KEYS[1] .. id
  local f = redis.call("HMGET", key, "state", "token", "score", "payload", "workers", "nerrors")
  if f[1] == "reserved" then
    if not dry_run then
      redis.call("HSET", key, "state", "ready")
      redis.call("ZADD", KEYS[2], f[3], id)
      redis.call("ZREM", KEYS[3], id)
    end
    released[#released + 1] = id
  elseif f[1] == "running" then
    local errors = {}
    for n = 1, tonumber(f[6]) or 0 do
      errors[n] = redis.call("HGET", key, "error:" .. n) or ""
    end
    running[#running + 1] = {id, f[2], f[4], f[5] or "", deadline, errors}
  elseif not dry_run then
    redis.call("ZREM", KEYS[3], id)  -- a ghost: the record is gone or already settled
  end
end
if #released > 0 and not dry_run and redis.call("LLEN", KEYS[4]) == 0 then
  redis.call("RPUSH", KEYS[4], 1)
end
return {released, running}
