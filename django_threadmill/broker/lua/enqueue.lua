-- enqueue.lua: store new tasks and make each ready, or delayed until its run_after.
-- KEYS[1]  P:t:        record prefix; each task id is appended (ids come from the client)
-- KEYS[2]  P:ready     zset: ready ids by (100 - priority) * PRIORITY_STEP + seq
-- KEYS[3]  P:delayed   zset: delayed ids by due time in ms
-- KEYS[4]  P:seq       string: FIFO counter within a priority
-- KEYS[5]  P:wake      list: wake-up tokens for idle fetchers
-- KEYS[6]  P:u:        unique key prefix; a digest is appended (string: the id holding it)
-- KEYS[7]  P:fired:    schedule marker prefix; a schedule name is appended (string: last slot ms)
-- KEYS[8]  P:damaged   hash: ids and keys set aside -> "<ms> <script>: <reason>"
-- KEYS[9]  P:leases    zset: reserved and running ids; read (ZSCORE), with P:ready and
--                       P:delayed, only for a unique key held by a task that has not finished
-- ARGV[1]  wake_cap    most tokens kept in P:wake
-- ARGV[2]  guards      number of guarded tasks, g (0 for a plain call: nothing more to pay)
-- ARGV[3..] per guard, 4 values: position of its task in the batch (1-based), kind ("u" unique
--           | "s" schedule slot at a supervisor's start | "a" schedule slot it waited for |
--           "w" workflow step), name (digest | schedule | "<workflow id>:<step>", kept in the
--           record's `workflow` field), window_ms (u) or slot_ms (s, a)
-- then per task, 4 values: id, payload (JSON, stored as is), priority,
--           run_after_ms ("" for none)
-- Returns: the number of tasks stored; when a unique task was a duplicate, {stored, then per
--          duplicate: its position, the id of the task holding the key}. (A table reply costs
--          Redis about 1.5 µs more per call than a number: plain calls keep the number.)
-- Fence:   an id that exists already is skipped, never overwritten: ids are fresh uuids (or
--          derived from a schedule slot), so it is a retry of a call whose reply was lost, or a
--          second supervisor firing the same slot; that makes enqueue idempotent (a call that
--          stores nothing then rewrites P:seq as it is, for WAIT: see there). A unique key
--          held by an unfinished task makes the task a duplicate; a schedule slot at or before
--          the last one fired is skipped, so a finished, expired slot never fires again; with
--          no marker an "s" slot is only recorded, as "<ms>.0" (a new schedule), and an "a"
--          slot fires, as does an "a" slot that finds its own time only recorded. A
--          unique key or schedule marker of another type (written by hand) is set aside and
--          replaced, as is one whose holder's record cannot be read; one whose holder is in
--          no index (set aside: it never runs) is replaced.
-- Types:   an index of another type fails the call (WRONGTYPE, naming the key) with no task
--          stored: a refused P:ready or P:delayed ZADD deletes the records just written, takes
--          its P:ready entries back and puts back the schedule markers it moved, so a retry
--          after the key is deleted stores every task and fires the slot; a P:seq that is no
--          counter the same, before any record. A unique key claimed (its holder is gone:
--          taken over next time) and a P:damaged note may stay. P:wake comes last: then the
--          tasks are stored and indexed, and no idle fetcher was woken for them (a retry of
--          the call finds them stored).
-- Clock:   redis.call("TIME") only: the enqueue time stored, and ready or delayed.
local now = now_ms()

-- The suffix of a marker only recorded, not fired (a new schedule's first slot, "<ms>.0"): it
-- reads as the same number to tonumber and to every reader of the marker.
local SEEN = ".0"
local guard_at = {}
local first = 3 + tonumber(ARGV[2]) * 4
local now_text = tostring(now)  -- the enqueue time of every task stored, formatted once
for g = 3, first - 1, 4 do
  local kind, name = ARGV[g + 1], ARGV[g + 2]
  local key = (kind == "u" and KEYS[6] or KEYS[7]) .. name
  guard_at[tonumber(ARGV[g])] = {
    key = key, kind = kind, name = name, value = tonumber(ARGV[g + 3]), text = ARGV[g + 3],
  }
end

local stored = 0
local duplicates = nil  -- {position, holder...}, made at the first duplicate only
local marked = {}  -- per schedule marker set: its key, what it held before (false: nothing)
-- Ids of the unique tasks this call stored: they enter P:ready or P:delayed only at its end,
-- and an equal task later in the batch is their duplicate all the same.
local unique_here = {}
-- Read the string at a guard's `key`, or set the key aside (it is replaced below) and read nil.
local function guard_value(key)
  local value = redis.pcall("GET", key)
  if type(value) == "table" and value.err then
    local where = key:sub(#KEYS[1] - 1)  -- "u:<digest>" or "fired:<name>", inside the tag
    set_aside(KEYS[8], where, now, "enqueue", "its key holds no string (" .. value.err .. ")")
    return nil
  end
  return value
end

-- Claim a task's guard; false when it must not be stored (a duplicate is noted with its holder).
local function claim(guard, id, position)
  local key, value = guard.key, guard.value
  if guard.kind == "w" then
    return true  -- a step's id is fixed: an id stored already is skipped before its guard
  elseif guard.kind == "s" or guard.kind == "a" then
    local before = guard_value(key)
    local last = tonumber(before)
    -- A slot a supervisor waited for fires though another, started after the marker was
    -- lost, recorded it first as a new schedule's (docs/schedules.md, Periodic tasks).
    local only_seen = guard.kind == "a" and last == value and before:sub(-#SEEN) == SEEN
    if last and last >= value and not only_seen then
      return false
    end
    marked[#marked + 1], marked[#marked + 2] = key, before or false
    if not last and guard.kind == "s" then
      redis.call("SET", key, guard.text .. SEEN)  -- a new schedule starts with its next slot
      return false
    end
    redis.call("SET", key, value)
    return true  -- an "a" slot with no marker too: the marker was lost
  end
  if not redis.call("SET", key, id, "NX", "PX", value) then
    local holder = guard_value(key)
    local held, problem = unique_here[holder] or false, nil
    if holder and not held then
      held, problem = holds_unique(KEYS[1], holder, KEYS[2], KEYS[3], KEYS[9])
      if problem then
        set_aside(KEYS[8], holder, now, "enqueue", problem)
      end
    end
    if held then
      duplicates = duplicates or {}
      duplicates[#duplicates + 1] = position
      duplicates[#duplicates + 1] = holder
      return false
    end
    -- The holder finished by a path that does not release keys (cancel), is gone, cannot be
    -- read, or is in no index (set aside): take over.
    redis.call("SET", key, id, "PX", value)
  end
  return true
end

local ready, delayed = {}, {}  -- score, id pairs for P:ready and P:delayed

-- Take back what this call stored: its records (their ids are fresh), its ready entries when
-- `unready`, and its schedule marks. Unique keys claimed stay: their holder is gone, so the
-- next claim takes them over.
local function undo(unready)
  local ids = {}
  for i = 2, #ready, 2 do
    ids[#ids + 1] = ready[i]
  end
  if unready then
    call_chunked("ZREM", KEYS[2], ids)
  end
  for i = 2, #delayed, 2 do
    ids[#ids + 1] = delayed[i]
  end
  for _, id in ipairs(ids) do
    redis.call("DEL", KEYS[1] .. id)
  end
  for i = #marked - 1, 1, -2 do  -- last first: a schedule marked twice gets its first value
    if marked[i + 1] then
      redis.call("SET", marked[i], marked[i + 1])
    else
      redis.call("DEL", marked[i])
    end
  end
end

-- The FIFO counter moves only once a task is stored: a call that stores nothing (a duplicate,
-- a retried call, a slot fired already) writes nothing, but for the retry below.
local seq
local resent = false  -- an id stored already was met: the retry of a call whose reply was lost
for i = first, #ARGV, 4 do
  local id, priority, run_after_ms = ARGV[i], tonumber(ARGV[i + 2]), ARGV[i + 3]
  local position = (i - first) / 4 + 1
  local guard = guard_at[position]
  local fresh = redis.call("EXISTS", KEYS[1] .. id) == 0
  resent = resent or not fresh
  if fresh and (not guard or claim(guard, id, position)) then
    if not seq then
      local count = (#ARGV - i + 1) / 4  -- at most the tasks left
      local counted = redis.pcall("INCRBY", KEYS[4], count)
      if type(counted) == "table" then  -- a P:seq that is no counter: before any record
        undo(false)
        return redis.error_reply(counted.err .. " in " .. KEYS[4])
      end
      seq = counted - count
    end
    seq = seq + 1
    local score = (100 - priority) * PRIORITY_STEP + seq
    redis.call("HSET", KEYS[1] .. id, "payload", ARGV[i + 1], "state", "ready", "score", score,
      "token", 0, "enqueued_ms", now_text, "run_after_ms", run_after_ms, "nerrors", 0)
    if guard and guard.kind == "u" then  -- the window too: a requeue claims the key again
      redis.call("HSET", KEYS[1] .. id, "unique", guard.name, "unique_ms", guard.value)
      unique_here[id] = true
    elseif guard and guard.kind == "w" then
      redis.call("HSET", KEYS[1] .. id, "workflow", guard.name)
    end
    if run_after_ms ~= "" and tonumber(run_after_ms) > now then
      delayed[#delayed + 1] = tonumber(run_after_ms)
      delayed[#delayed + 1] = id
    else
      ready[#ready + 1] = score
      ready[#ready + 1] = id
    end
    stored = stored + 1
  end
end
-- Redis keeps what a failed script wrote: an index of another type refusing its ZADD would
-- leave the tasks stored in no index, their ids skipped by the retry, and a schedule's slot
-- marked fired without its task (docs/lifecycle.md, Keys of another type). Each ZADD is the
-- call's first write to its index, so a refused one wrote nothing there: undo the rest.
local refused = pcall_chunked("ZADD", KEYS[2], ready)
if refused then
  undo(false)
  return redis.error_reply(refused .. " in " .. KEYS[2])
end
refused = pcall_chunked("ZADD", KEYS[3], delayed)
if refused then
  undo(true)
  return redis.error_reply(refused .. " in " .. KEYS[3])
end

-- A WAIT confirms only its connection's writes: a retry on a fresh connection that wrote
-- nothing would be confirmed at once while the first try's write may still be short of a
-- replica. Rewriting the counter as it is makes the call propagate (docs/scaling.md,
-- Durability modes).
if resent and stored == 0 then
  redis.pcall("INCRBY", KEYS[4], 0)
end
local missing = tonumber(ARGV[1]) - redis.call("LLEN", KEYS[5])
for _ = 1, math.min(missing, stored) do
  redis.call("RPUSH", KEYS[5], 1)
end
if duplicates then
  table.insert(duplicates, 1, stored)
  return duplicates
end
return stored
