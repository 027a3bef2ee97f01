-- reap.lua: settle expired leases: reservations go back to ready, running ones are reported.
-- KEYS[1]  P:t:        record prefix; each expired id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[4]  P:wake      list: wake-up tokens for idle fetchers
-- KEYS[5]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[6]  P:workers   zset: worker ids by last renewal in ms; one dated ahead of the Redis
--                      clock shows that clock stepped back since
-- KEYS[7]  P:rate      string: when the rate limit's next reservation turn comes (acquire.lua)
-- KEYS[8]  P:outbox    list: workflow steps set aside here, for their workflow to fail from
-- ARGV[1]  limit       most expired lease entries looked at
-- ARGV[2]  dry_run     "1" reports without changing anything
-- ARGV[3]  wake_on_free  "1" for a queue with a concurrency limit: a ghost or a record set
--                        aside gives back its slot, and a fetcher is woken for it
-- ARGV[4]  most_chars  most characters of payloads and earlier errors to reply with: the
--                      running attempt past it ends the call (its first whatever its size)
-- ARGV[5]  lease_ttl_ms  the backend's lease length: after a step back of the clock, a deadline
--                        further ahead than this is brought to it from now
-- ARGV[6]  interval_us   µs between two turns under the queue's rate ("" for no rate)
-- Returns: {{id...} reservations released (or that would be),
--           {{id, token, payload, workers, deadline_ms, {error_json...}, workflow, enqueued_ms,
--           started_ms, attempted_ms}...} expired running attempts, which the client settles
--           through finish.lua with that token (workflow: a step's `<workflow id>:<step>`, else
--           ""; a step its workflow cancelled gets no retry, docs/workflows.md, Cancel; the
--           times, "" when absent, are shown to the task's retry policy, as a worker shows
--           them),
--           records set aside (or that would be): their record cannot be read, holds a
--           state no script writes (or none), or a running one counts more errors than a
--           task has attempts (common.lua) or has no lease token to fence its settlement,
--           expired lease entries looked at, ghosts and set-aside records included: fewer
--           than limit, and not cut short: no more expired ones wait,
--           1 when most_chars cut the call short (more may wait), else 0}.
-- Fence:   a running attempt is only reported; finish.lua's token check lets one settler win.
--          A workflow step set aside is pushed onto P:outbox too (common.lua set_aside_step).
--          A released reservation keeps no token: a late call of the old lease is stale. Nor
--          does it keep a progress report (one may have gone out before its start notice).
--          It is marked `lapsed`: its holder may have died running it within the start
--          notice's hold, so each later attempt has its start written before it runs, and one
--          that ends its process as it starts is settled as an attempt, not put back for good
--          (docs/worker.md, Leases).
-- Rate:    a released reservation never started: it gives back the reservation turn it took,
--          as release.lua does (under "1/h" a killed worker's task waited an hour more).
-- Types:   a key of another type fails the call (WRONGTYPE) before any task moves: P:workers
--          and P:leases are read first, and P:ready written before the records (a set-aside
--          note already made is made again by the next pass, and a workflow step's push,
--          advanced from once: docs/workflows.md, Exactly once; P:outbox is met at a step set
--          aside, before P:ready). Only P:wake comes after the moves, and P:rate: then the
--          reservations are back in P:ready, no idle fetcher was woken for them and no turn
--          given back.
-- Clock:   redis.call("TIME") only.
local now = now_ms()
local dry_run = ARGV[2] == "1"
-- A renewal dated ahead of the clock shows it stepped back since (NTP, a failover to a replica
-- whose clock lags): deadlines written before the step lie that much further ahead, and a
-- worker that died since kept its tasks running as long. Those more than lease_ttl ahead are
-- brought to lease_ttl from now, as a renewal would; a live worker renews its own meanwhile
-- (docs/lifecycle.md, After an outage or a stall).
local stepped_back = #redis.call("ZRANGEBYSCORE", KEYS[6], "(" .. now, "+inf", "LIMIT", 0, 1) > 0
if stepped_back and not dry_run then
  local bound = now + tonumber(ARGV[5])
  local ahead = redis.call("ZRANGEBYSCORE", KEYS[3], "(" .. bound, "+inf", "LIMIT", 0,
    tonumber(ARGV[1]))
  local bounded = {}
  for _, id in ipairs(ahead) do
    bounded[#bounded + 1] = bound
    bounded[#bounded + 1] = id
  end
  call_chunked("ZADD", KEYS[3], bounded)
end
local expired = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now, "WITHSCORES", "LIMIT", 0,
  tonumber(ARGV[1]))

-- States of a record no longer leased, whose lease entry is a ghost to drop: handed back or
-- settled since.
local LEFT_LEASED = {ready = true, successful = true, failed = true}
local released, running, ready, dropped, set_aside_count = {}, {}, {}, {}, 0
local most_chars, chars = tonumber(ARGV[4]), 0  -- of the payloads and errors in the reply
local looked_at, cut_short = #expired / 2, 0
for i = 1, #expired, 2 do
  local id, deadline = expired[i], expired[i + 1]
  local key = KEYS[1] .. id
  local f, problem = read_record(key, "state", "token", "score", "payload", "workers", "nerrors",
    "workflow", "enqueued_ms", "started_ms", "attempted_ms")
  local nerrors
  if f and f[1] == "running" then
    nerrors, problem = error_count(f[6])
    if not problem and (not f[2] or f[2] == "") then
      -- Every attempt runs under its lease's token, which fences its settlement: a missing
      -- one made finish.lua answer stale on every pass, an empty one fences nothing.
      problem = "running without a lease token"
    end
  elseif f and f[1] ~= "reserved" and not LEFT_LEASED[f[1] or ""] and (f[1] or f[4]) then
    -- A state no script writes (HSET by hand): dropped as a ghost, the record stayed out of
    -- every index, unsaid. A record gone has no payload either.
    problem = f[1] and ("in the leases index in state " .. f[1])
      or "in the leases index without a state field"
  end
  if problem then
    if not dry_run then
      set_aside_step(KEYS[5], KEYS[8], key, id, now, "reap", problem, f and f[7])
    end
    dropped[#dropped + 1] = id
    set_aside_count = set_aside_count + 1
  elseif f[1] == "reserved" then
    ready[#ready + 1] = ready_score(f[3])
    ready[#ready + 1] = id
    dropped[#dropped + 1] = id
    released[#released + 1] = id
  elseif f[1] == "running" then
    local errors, size = {}, #(f[4] or "")
    for n = 1, nerrors do
      errors[n] = redis.call("HGET", key, "error:" .. n) or ""
      size = size + #errors[n]
    end
    if #running > 0 and chars + size > most_chars then
      -- A backlog of large payloads (a host's workers all died) held it all in one reply,
      -- in Redis and in the reaper: the rest waits for the next call.
      looked_at, cut_short = (i - 1) / 2, 1
      break
    end
    chars = chars + size
    running[#running + 1] = {id, f[2], f[4], f[5] or "", deadline, errors, f[7] or "",
      f[8] or "", f[9] or "", f[10] or ""}
  else
    dropped[#dropped + 1] = id  -- a ghost: the record is gone or already settled
  end
end
if not dry_run then
  -- Into P:ready before any record changes: when that key holds another type the ZADD fails
  -- with the reservations still reserved and leased, for the pass after the key is deleted.
  call_chunked("ZADD", KEYS[2], ready)
  for _, id in ipairs(released) do
    redis.call("HSET", KEYS[1] .. id, "state", "ready", "token", "", "lapsed", "1")
    -- A report may have gone out while the start notice was held: the next attempt starts
    -- without it, as after a retry (docs/lifecycle.md, Progress).
    forget_progress(KEYS[1] .. id)
  end
  call_chunked("ZREM", KEYS[3], dropped)
  if #released > 0 or slot_freed(ARGV[3], #dropped, KEYS[2]) then
    wake_one(KEYS[4])
  end
  give_back_turns(KEYS[7], ARGV[6], #released)
end
return {released, running, set_aside_count, looked_at, cut_short}
