-- acquire.lua: promote due delayed tasks, then reserve up to `count` ready tasks, unless paused.
-- KEYS[1]  P:t:        record prefix; popped ids are appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:delayed   zset: delayed ids by due time in ms
-- KEYS[4]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[5]  P:wake      list: wake-up tokens for idle fetchers
-- KEYS[6]  P:rate      string: when the rate limit's next token is available, in ms to the µs
-- KEYS[7]  P:fence     string: the queue's reservation counter
-- KEYS[8]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[9]  P:paused    string: present while the queue is paused (broker/pausing.py)
-- KEYS[10] P:outbox    list: workflow steps set aside here, for their workflow to fail from
-- ARGV[1]  count           most tasks to reserve
-- ARGV[2]  reserve_ttl_ms  reservation lease length
-- ARGV[3]  promote_limit   most due delayed tasks moved to ready per call
-- ARGV[4]  concurrency     most ids the queue may hold in P:leases ("" for no limit)
-- ARGV[5]  token_us        µs between two starts under a rate limit ("" for no limit)
-- ARGV[6]  most_chars      most characters of payloads and errors to reply with: a task past
--                          them goes back to P:ready unchanged, in its place (the first task
--                          is reserved whatever its size)
-- ARGV[7]  nonce           the call's random digits, appended to its fence token
-- Returns: {next_due_in_ms (-1 when nothing is delayed and no token is awaited, or the queue
--           is paused; 0 when records set aside took places of tasks still ready; a token
--           awaited in whole ms rounded down, so 0 when it comes within the ms),
--           held_back (0 when no limit kept ready tasks back; 1 when the concurrency limit
--           did: look again when a wake token says a slot is free, or at next_due; 2 when the
--           rate did: its next token comes at next_due; 0 too when popped records were
--           set aside in places the limit allowed; 3 when the queue is paused, whatever it
--           holds: nothing to look at again before a resume's wake token),
--           fence token of this call's reservations ("" when none),
--           how many records this call set aside (docs/lifecycle.md, Damaged records),
--           the Redis time of the call in ms (0 when an empty queue answered unread),
--           then per task, flat: id, payload, workers, enqueued_ms, started_ms, workflow
--           (a workflow step's `<workflow id>:<step>`, else ""), lapsed ("1" once a reaper
--           put the task back after its holder's lease lapsed: reap.lua), nerrors, and that
--           many error_json}
--          Flat, with the lease deadline and the token formatted once per call: a table per
--          task and a number formatted per task cost Redis more than the task's HSET.
-- Fence:   every task reserved by one call gets the same new token, the next value of
--          P:fence followed by the nonce: a task appears once per call, so no two
--          reservations of a task share one. The nonce keeps a promoted replica whose counter
--          lags (its primary's last calls never reached it) from handing out again a token the
--          old primary gave: a late call of that lease would pass for the new one's.
--          An id popped or promoted whose record cannot be read, is missing, is not in state
--          "ready", has no payload field, or counts more errors than a task has attempts
--          (common.lua MAX_ATTEMPTS) is set aside in P:damaged; every other id is handled as
--          usual. A workflow step set aside is pushed onto P:outbox too (common.lua
--          set_aside_step). Bytes that are not UTF-8 are not looked for here (a scan of every
--          payload cost a third of this script's work): the worker reads the reply undecoded
--          and sets such a task aside with set_aside.lua (broker/raw_replies.py).
-- Types:   a key of another type fails the call (WRONGTYPE) before any task moves: P:delayed,
--          P:ready, P:leases (under a concurrency limit), P:fence and P:rate are met before,
--          and a refused lease ZADD puts the popped tasks back in P:ready. P:damaged (when a
--          popped record is set aside) and P:wake come after: the call fails with its tasks
--          reserved and leased, which the reaper hands back when the lease lapses (a popped
--          record to set aside is then out of P:ready without a note). So does P:outbox, met
--          at a workflow step set aside.
-- Paused:  a paused queue hands out nothing and promotes nothing: the reply is {-1, 3, "", 0,
--          0}, what an empty queue answers but for the 3, so an idle worker blocks on the wake
--          list until resume pushes a token (docs/lifecycle.md, Pausing a queue), and a drain
--          can say why it left the queue's tasks (docs/testing.md, What a drain leaves).
--          Nothing is written.
-- Empty:   a queue with nothing delayed, no limit and nothing ready gives the same reply from
--          its two reads, before the pause check and the clock: a worker asks its empty
--          queues beside a busy one every refill, so an empty one costs those reads alone.
-- Cost:    an empty queue (no limit): two ZRANGEs. A paused queue: the delayed head, then
--          (with no limit and nothing delayed) the ready head, and EXISTS. Per batch: two
--          ZRANGEs, EXISTS, TIME, GET, ZREMRANGEBYRANK, INCRBY and the lease ZADD (and LLEN
--          when tasks are left).
--          Per task: one HMGET and one HSET (a task with errors: one more HMGET, and an HGET
--          per error). A task past most_chars: one HGET, and its place in one ZADD.
--          A limit caps what is popped, so held-back tasks stay ready, in order.
-- Clock:   redis.call("TIME") only, read once; the rate's token bucket (one token) in µs.
-- The delayed index's head: when nothing is due, as on most calls, this one read serves both
-- the promotion check and the reply's next due time.
local head = redis.call("ZRANGE", KEYS[3], 0, 0, "WITHSCORES")
-- With nothing delayed and no limit the ready head is read first, one id more than wanted
-- (so whether tasks are left is known without a ZCARD); nothing there is an empty queue.
local popped
if not head[1] and ARGV[4] == "" and ARGV[5] == "" then
  popped = redis.call("ZRANGE", KEYS[2], 0, tonumber(ARGV[1]))
  if #popped == 0 then
    return {-1, 0, "", 0, 0}
  end
end
if redis.call("EXISTS", KEYS[9]) == 1 then
  return {-1, 3, "", 0, 0}
end
local clock_us = now_us()
local now = math.floor(clock_us / 1000)

local set_aside_count = 0
local function put_aside(id, reason, workflow)
  set_aside_step(KEYS[8], KEYS[10], KEYS[1] .. id, id, now, "acquire", reason, workflow)
  set_aside_count = set_aside_count + 1
end

if head[2] and tonumber(head[2]) <= now then
  local due = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", now, "LIMIT", 0, tonumber(ARGV[3]))
  local promoted = {}
  for _, id in ipairs(due) do
    local f, problem = read_record(KEYS[1] .. id, "state", "score")
    if not f then
      put_aside(id, problem)
    elseif not f[1] then
      put_aside(id, "in the delayed index without a record")
    else
      promoted[#promoted + 1] = ready_score(f[2])
      promoted[#promoted + 1] = id
    end
  end
  call_chunked("ZADD", KEYS[2], promoted)
  call_chunked("ZREM", KEYS[3], due)
  head = redis.call("ZRANGE", KEYS[3], 0, 0, "WITHSCORES")
end

local count = tonumber(ARGV[1])
if ARGV[4] ~= "" then
  count = math.max(0, math.min(count, tonumber(ARGV[4]) - redis.call("ZCARD", KEYS[4])))
end
local token_wait = -1  -- µs
if ARGV[5] ~= "" and count > 0 then
  token_wait = math.max(0, next_token_us(KEYS[6], clock_us, tonumber(ARGV[5])) - clock_us)
  count = token_wait == 0 and 1 or 0  -- a bucket of one token: starts are evenly spaced
end
local held_back = count < tonumber(ARGV[1]) and redis.call("ZCARD", KEYS[2]) > count

local token = ""  -- this call's fence token, set once something is popped
local deadline = tostring(now + tonumber(ARGV[2]))
local leased = {}
-- ZRANGE then ZREMRANGEBYRANK rather than ZPOPMIN: ZPOPMIN formats every score as a
-- double for its reply, about 4,800 instructions a task under callgrind. One id more than
-- wanted is read, so whether tasks are left is known without a ZCARD. Read already when
-- nothing was delayed and no limit applies (above): nothing moved since.
popped = popped or (count > 0 and redis.call("ZRANGE", KEYS[2], 0, count) or {})
local left = #popped > count
popped[count + 1] = nil
if #popped > 0 then
  -- The counter is checked before anything moves, so a damaged one fails the call with every
  -- task still ready; it is bumped after the pop, because under maxmemory Redis refuses a
  -- script's first write that may add memory (INCRBY) and allows the rest once one is made.
  local fence = redis.call("GET", KEYS[7])
  if fence and not (#fence <= 15 and fence:match("^[1-9]%d*$")) then
    return redis.error_reply("value is not an integer or out of range in " .. KEYS[7])
  end
  redis.call("ZREMRANGEBYRANK", KEYS[2], 0, #popped - 1)
  -- A new counter starts just above the Redis time in ms: above any token handed out before
  -- it, whether by a lost counter (unless it averaged over one call per ms) or as the small
  -- per-record counts of earlier versions, so no old lease can match a new reservation.
  token = tostring(redis.call("INCRBY", KEYS[7], fence and "1" or tostring(now + 1))) .. ARGV[7]
end
-- A token_wait of -1 means the rate was not asked: the concurrency limit held, or there is no rate.
local reply = {-1, held_back and (token_wait >= 0 and 2 or 1) or 0, token, 0, now}
-- Popped ids that cannot be reserved, why, and their workflow (false for none): set aside once
-- the rest are leased.
local aside = {}
local most_chars = tonumber(ARGV[6])
local chars = 0  -- of the payloads and errors in the reply
local past_budget = 0  -- where in popped the tasks past most_chars begin (0: none were)
for i, id in ipairs(popped) do
  local key = KEYS[1] .. id
  local f, problem = read_record(key, "state", "payload", "enqueued_ms", "nerrors", "workflow",
    "lapsed")
  if f and f[1] ~= "ready" then
    problem = f[1] and ("in the ready index in state " .. f[1])
      or (f[2] and "in the ready index without a state field")  -- HDEL by hand: a record still
      or "in the ready index without a record"
  elseif f and not f[2] then
    problem = "no payload field"  -- nothing to run, nor to fail with the task's own error
  end
  local workers, started_ms, nerrors
  if not problem then
    workers, started_ms, nerrors, problem = earlier_attempts(key, f[4])
  end
  if problem then
    aside[#aside + 1], aside[#aside + 2], aside[#aside + 3] = id, problem, f and f[5] or false
  else
    local n = #reply
    reply[n + 1], reply[n + 2], reply[n + 3] = id, f[2], workers or ""
    reply[n + 4], reply[n + 5], reply[n + 6] = f[3] or "", started_ms or "", f[5] or ""
    reply[n + 7], reply[n + 8] = f[6] or "", nerrors
    local size = #f[2]
    for e = 1, nerrors do
      reply[n + 8 + e] = redis.call("HGET", key, "error:" .. e) or ""
      size = size + #reply[n + 8 + e]
    end
    if #leased > 0 and chars + size > most_chars then
      for k = #reply, n + 1, -1 do
        reply[k] = nil
      end
      past_budget = i
      break
    end
    chars = chars + size
    leased[#leased + 1] = deadline
    leased[#leased + 1] = id
  end
end
if past_budget > 0 then
  -- Not reserved: back in P:ready at their scores, so their order is as it was.
  local back = {}
  for i = past_budget, #popped do
    back[#back + 1] = ready_score(redis.call("HGET", KEYS[1] .. popped[i], "score"))
    back[#back + 1] = popped[i]
  end
  call_chunked("ZADD", KEYS[2], back)
  left = true
end
local function put_popped_aside()
  for i = 1, #aside, 3 do
    put_aside(aside[i], aside[i + 1], aside[i + 2] or nil)
  end
end
-- The lease ZADD is the first write to P:leases and comes before any write to a record: when
-- that key holds another type it fails with the tasks changed only by their pop from P:ready,
-- which is undone, so the error leaves every task ready (docs/lifecycle.md, Keys of another
-- type). Not before the pop: that must stay the call's first write (see the fence above).
local refused = pcall_chunked("ZADD", KEYS[4], leased)
if refused then
  local back = {}
  for i = 2, #leased, 2 do
    back[#back + 1] = ready_score(redis.call("HGET", KEYS[1] .. leased[i], "score"))
    back[#back + 1] = leased[i]
  end
  call_chunked("ZADD", KEYS[2], back)
  put_popped_aside()
  return redis.error_reply(refused .. " in " .. KEYS[4])
end
for i = 2, #leased, 2 do
  redis.call("HSET", KEYS[1] .. leased[i], "state", "reserved", "token", token)
end
put_popped_aside()
reply[4] = set_aside_count
if #aside > 0 then
  -- Popped records set aside took places the limit allowed and left them unused (its slots,
  -- or its token, kept for the next call): it held nothing back, so the tasks left are
  -- looked at now (below), not after a finish's wake token that may never come.
  held_back = false
  reply[2] = 0
end
if token_wait == 0 and #leased > 0 then
  set_token_us(KEYS[6], clock_us + tonumber(ARGV[5]))
  token_wait = tonumber(ARGV[5])
end

if head[2] then
  reply[1] = math.max(0, tonumber(head[2]) - now)
end
-- Rounded down: a fetcher told to look again a whole ms late lost that ms from every interval
-- ("750/s" reserved 500 a second), so it looks again at once for a token due within the ms.
local token_wait_ms = math.floor(token_wait / 1000)
if held_back and token_wait >= 0 and (reply[1] < 0 or token_wait_ms < reply[1]) then
  reply[1] = token_wait_ms
end
-- Pass the baton: tasks are left, so make sure one more idle fetcher wakes up (unless a limit
-- holds them: then a finish or the next token lets them go, and a woken fetcher would spin).
left = left and not held_back
if left and redis.call("LLEN", KEYS[5]) == 0 then
  redis.call("RPUSH", KEYS[5], 1)
end
-- Records set aside may have taken the places of tasks that are left: look again now.
if left and set_aside_count > 0 then
  reply[1] = 0
end
return reply
