-- common.lua: constants and helpers (no keys, no state). Each script is sent with those it
-- uses, directly or through another (broker/prelude.py): definitions are parted by blank lines,
-- and a definition holds none.

-- A ready task's score is (100 - priority) * PRIORITY_STEP + seq: higher priority first, FIFO
-- within one (seq from P:seq, one counter per queue). 2^40: priority order holds between tasks
-- enqueued fewer than a trillion enqueues apart (docs/design.md, Rules of the Redis data model).
local PRIORITY_STEP = 1099511627776

-- A task runs at most MAX_ATTEMPTS attempts (retry.py), and every attempt's error is read back
-- one HGET each when it is reserved or reaped: a record counting more is damaged, set aside
-- instead of looped over (a count of a million held Redis for seconds, past SCRIPT KILL).
local MAX_ATTEMPTS = 1000

-- The one clock: Redis server time in milliseconds.
local function now_ms()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- The same clock in microseconds, for the rate buckets: an interval in whole ms ran "750/s" at
-- 500/s (docs/schedules.md, Per-queue limits). Below 2^53, exact in a Lua number, until 2255.
local function now_us()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- A rate bucket's key holds when its token comes in ms, to the µs ("1700000000123.456"), and
-- reads as whole ms as earlier versions wrote it: a worker of either version can read the other's.
local function set_token_us(key, at)
  redis.call("SET", key, string.format("%.3f", at / 1000))
end

-- When the one token of a rate's bucket at `key` comes (µs), `interval` µs apart: a time set
-- under a slower rate (a deploy raised it) is brought to one interval from `now`, and kept so.
-- acquire.lua's reservations and pace.lua's starts each have such a bucket.
local function next_token_us(key, now, interval)
  local stored = math.floor((tonumber(redis.call("GET", key)) or 0) * 1000 + 0.5)
  if stored - now > interval then
    stored = now + interval
    set_token_us(key, stored)
  end
  return stored
end

-- Give the reservation bucket at `key` back one turn per task reserved under a rate of
-- `interval` µs ("" for no rate) and handed back unstarted, `count` of them: none comes sooner
-- than now, and starts keep their own bucket (pace.lua), so no more tasks start per period
-- (docs/schedules.md, Per-queue limits).
local function give_back_turns(key, interval, count)
  if count > 0 and interval ~= "" then
    local now, step = now_us(), tonumber(interval)
    set_token_us(key, math.max(next_token_us(key, now, step) - count * step, now))
  end
end

-- Damaged records (docs/lifecycle.md, Damaged records). A script that walks records handles
-- each by itself: one it cannot use is set aside in the queue's P:damaged hash (id -> "<ms>
-- <script>: <reason>") and left out of the call, which goes on with the others. Records are
-- read before anything is written, so a record that fails to read stops nothing half-way.

-- Read `...` fields of the record at `key`: the fields, or nil and why the record cannot be
-- read (a key of another type: only something other than django-threadmill writes one).
local function read_record(key, ...)
  local f = redis.pcall("HMGET", key, ...)
  if f.err then
    return nil, "its key holds no hash (" .. f.err .. ")"
  end
  return f
end

-- Record that `id` was set aside by `script` at `now` (ms) for `reason`.
local function set_aside(damaged, id, now, script, reason)
  redis.call("HSET", damaged, id, now .. " " .. script .. ": " .. reason)
end

-- Push the workflow step `id`, whose record is at `key`, onto its queue part's `outbox` for its
-- workflow to advance from, counted in the record's `outboxed` (forget_entry.lua reads it).
-- In the call that ends it or sets it aside: the entry exists if and only if that does
-- (docs/workflows.md, Exactly once).
local function push_step(outbox, key, id)
  redis.call("RPUSH", outbox, id)
  redis.pcall("HINCRBY", key, "outboxed", 1)  -- entries waiting; one written by hand: read as 1
end

-- set_aside, for the record at `key` whose `workflow` field was read (nil: a task of no
-- workflow, or a key that holds no hash and cannot say): a workflow step set aside never runs
-- nor ends, so it is pushed onto `outbox` too, and the drainer fails its workflow naming it,
-- which stayed open for good (docs/workflows.md, A step set aside).
local function set_aside_step(damaged, outbox, key, id, now, script, reason, workflow)
  set_aside(damaged, id, now, script, reason)
  if workflow then
    push_step(outbox, key, id)
  end
end

-- A ready score as stored, or the head of the lowest priority's band (-100) for one that is not
-- a finite number: a score written by hand must not stop the task from running ("nan", which
-- ZADD refuses, failed every acquire of its queue), nor jump the line ("-inf").
local function ready_score(stored)
  local score = tonumber(stored)
  if score and score > -math.huge and score < math.huge then  -- false for nan too
    return score
  end
  return 200 * PRIORITY_STEP
end

-- Whether the task `holder` a unique key names has not finished and is in the index it runs
-- from: ready in `ready` or `delayed`, reserved or running in `leases`. False for one that
-- finished by a path that does not release keys (cancel), is gone, or cannot be read (then also
-- why), and for one in no index: a record set aside (docs/lifecycle.md, Damaged records) is left
-- ready or running out of every index, listed in P:damaged or forgotten since, and never runs. A
-- claim takes such a key over (docs/schedules.md, Unique tasks). enqueue.lua's and requeue.lua's
-- claims; the index is read only for an unfinished holder, a would-be duplicate. An index of
-- another type (pcall) lists it: the holder holds, and a duplicate does not fail on that key.
local function holds_unique(prefix, holder, ready, delayed, leases)
  local f, problem = read_record(prefix .. holder, "state")
  local state = f and f[1]
  local function listed(index)
    return redis.pcall("ZSCORE", index, holder) ~= false
  end
  if state == "ready" then
    return listed(ready) or listed(delayed), problem
  end
  return (state == "reserved" or state == "running") and listed(leases), problem
end

-- Read the record at `key` if its state is `wanted`: returns its fields (state, then the
-- `...` fields asked for), or nil and what to reply instead: "missing" when there is no
-- record, "damaged" when it cannot be read (set aside as `script`, dated by TIME: the only
-- clock read here), else the state it is in. The opening check of the operator's scripts.
local function record_in_state(key, id, damaged, script, wanted, ...)
  local f, problem = read_record(key, "state", ...)
  if not f then
    set_aside(damaged, id, now_ms(), script, problem)
    return nil, "damaged"
  end
  if not f[1] then
    return nil, "missing"
  end
  if f[1] ~= wanted then
    return nil, f[1]
  end
  return f
end

-- Delete the progress report of the attempt that ended on the record at `key`, and the fields
-- `...` in the same HDEL: the next attempt starts without one (docs/lifecycle.md, Progress).
-- The fields are progress.lua's, codec/progress.py PROGRESS_FIELDS.
local function forget_progress(key, ...)
  redis.call("HDEL", key, "progress_done", "progress_total", "progress_note", "progress_ms", ...)
end

-- Run `command key items...` in chunks that stay under Lua's argument limit: one call per
-- thousand items instead of one per task (ZADD takes score/member pairs, so chunks stay even).
local function call_chunked(command, key, items)
  for i = 1, #items, 1000 do
    redis.call(command, key, unpack(items, i, math.min(i + 999, #items)))
  end
end

-- Whether dropping `dropped` lease entries of a queue freed a slot a fetcher must hear of:
-- `limited` is the call's "1" for a queue with a concurrency limit, whose acquire holds its
-- ready tasks back without passing a baton, so an idle fetcher learns of a free slot only from
-- a wake token. Reads P:ready (`ready`) only when an entry was dropped from such a queue.
local function slot_freed(limited, dropped, ready)
  return limited == "1" and dropped > 0 and redis.call("ZCARD", ready) > 0
end

-- Push a wake token onto the list at `wake` for one idle fetcher, unless one waits there.
local function wake_one(wake)
  if redis.call("LLEN", wake) == 0 then
    redis.call("RPUSH", wake, 1)
  end
end

-- call_chunked, but the error of a refused chunk is returned instead of raised (a key of
-- another type refuses the first chunk, before anything was written to it), so the caller can
-- undo what it wrote before; nil when every chunk went through.
local function pcall_chunked(command, key, items)
  for i = 1, #items, 1000 do
    local answer = redis.pcall(command, key, unpack(items, i, math.min(i + 999, #items)))
    if type(answer) == "table" and answer.err then
      return answer.err
    end
  end
end

-- The error of a call that must not go on, naming the first of the `...` keys (key, type,
-- key, type, ...) that holds a value of another type, or nil when each is absent or of its
-- type. The operator's scripts check every index they write before their first write, so a
-- key written by another program fails the call with nothing moved (docs/lifecycle.md, Keys
-- of another type).
local function wrong_kind(...)
  local expected = {...}
  for i = 1, #expected, 2 do
    local kind = redis.call("TYPE", expected[i]).ok
    if kind ~= "none" and kind ~= expected[i + 1] then
      return "WRONGTYPE Operation against a key holding the wrong kind of value in "
        .. expected[i]
    end
  end
end

-- The count a record's `nerrors` field says: a whole number in ASCII digits, as the scripts
-- write it; absent or anything else ("garbage", "-1", "2.5", "nan") reads as 0, as
-- codec/results.py errors_of reads it. Read by tonumber, "-1" made acquire answer -1 error
-- texts, a reply the worker could not read: its fetcher died with the batch reserved.
local function stored_count(nerrors)
  return nerrors and string.find(nerrors, "^%d+$") and tonumber(nerrors) or 0
end

-- The error count a record's `nerrors` field says (stored_count), or nil and why the record is
-- damaged when it is past MAX_ATTEMPTS.
local function error_count(nerrors)
  local count = stored_count(nerrors)
  if count > MAX_ATTEMPTS then
    return nil, "nerrors " .. nerrors .. " is past " .. MAX_ATTEMPTS .. ", the most attempts"
  end
  return count
end

-- Return the workers, first start time and error count of a task's earlier attempts, given
-- its record's `key` and stored `nerrors`, and why the record is damaged when the count is
-- (error_count). A started attempt comes back to ready only with an error recorded (retry,
-- reaped, requeued after failing), so a task without errors has no earlier attempt: nothing
-- to read, and no number to parse (each tonumber costs Redis about 1,000 instructions under
-- callgrind).
local function earlier_attempts(key, nerrors)
  if not nerrors or nerrors == "0" then
    return nil, nil, 0
  end
  local count, damage = error_count(nerrors)
  if not count then
    return nil, nil, 0, damage
  end
  local f = redis.call("HMGET", key, "workers", "started_ms")
  return f[1], f[2], count
end

-- Write into `fields` (HSET arguments) after its first `n` that `worker_id` began an attempt at
-- `started_ms` (the worker's wall clock, for display) on the record at `key` holding `nerrors`
-- errors: one more line in workers; the first start is started_ms, a later one attempted_ms
-- (readers take started_ms while it is absent). Returns the new count: callers reuse one table
-- for every task.
local function add_attempt(fields, n, key, nerrors, worker_id, started_ms)
  local workers, first_started_ms = earlier_attempts(key, nerrors)
  local joined = (workers and workers ~= "") and (workers .. "\n" .. worker_id) or worker_id
  fields[n + 1], fields[n + 2] = "workers", joined
  local first = not first_started_ms or first_started_ms == ""
  fields[n + 3], fields[n + 4] = first and "started_ms" or "attempted_ms", started_ms
  return n + 4
end
