-- requeue.lua: give a failed task a new attempt: same id, history kept, back in its place.
-- KEYS[1]  P:t:        record prefix; the id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:done      zset: finished ids by finish time in ms
-- KEYS[4]  P:wake      list: wake-up tokens for idle fetchers
-- KEYS[5]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[6]  P:u:        unique key prefix; a unique task's digest is appended
-- KEYS[7]  P:delayed   zset: delayed ids by due time in ms; a task whose run_after is still
--                       ahead (one cancelled while it waited for it) waits there again
-- KEYS[8]  P:leases    zset: reserved and running ids; read (ZSCORE), with P:ready and
--                       P:delayed, only for a unique key held by another task that has not
--                       finished
-- ARGV[1]  id
-- Returns: "requeued", or the state the task was in (nothing changes), "missing",
--          "exhausted" (it had MAX_ATTEMPTS attempts already: nothing changes), "damaged"
--          (its record cannot be read: set aside and taken out of the done index), or
--          {"held", holder id} (an equal unique task that has not finished holds the key:
--          nothing changes, as the two would run at once).
-- Fence:   state must be "failed"; the record stops expiring (nothing pending expires), and
--          forgets the failed attempt's finish time and progress. A unique task claims its
--          key again for a new window; a key naming this task, or a finished, missing,
--          unreadable one, or one in no index (set aside), is taken over (docs/schedules.md,
--          Unique tasks).
-- Types:   a key of another type fails the call (WRONGTYPE, naming the key) before anything
--          is written: P:done, P:ready, P:delayed and P:wake are checked first (TYPE), as the task
--          leaves one index for another; P:damaged is written only to set a record aside, as
--          the call's first write, and a unique key of another type is left as it is. Once
--          the key is deleted, a requeue again works.
-- Clock:   redis.call("TIME") only: the time the task is ready again (`ready_ms`, where the
--          queue's oldest-READY age counts from: its run_after when that is ahead), or the
--          date of a record set aside.
local wrong = wrong_kind(KEYS[3], "zset", KEYS[2], "zset", KEYS[7], "zset", KEYS[4], "list")
if wrong then
  return redis.error_reply(wrong)
end
local id = ARGV[1]
local key = KEYS[1] .. id
local f, refused = record_in_state(key, id, KEYS[5], "requeue", "failed", "score", "unique",
  "unique_ms", "nerrors", "run_after_ms")
if refused == "damaged" then
  redis.call("ZREM", KEYS[3], id)
end
if not f then
  return refused
end
if stored_count(f[5]) >= MAX_ATTEMPTS then
  return "exhausted"
end
-- A key of another type (a table) is left as it is. Its own key (a cancel keeps it) starts a
-- new window too, and a holder that finished without releasing the key, or is in no index
-- (set aside), holds nothing, as for an enqueue: the next equal enqueue then meets this task
-- instead of running beside it.
local unique = f[3] and KEYS[6] .. f[3]
local claim = false
if unique then
  local holder = redis.pcall("GET", unique)
  claim = not holder or holder == id
  if type(holder) == "string" and not claim then
    if holds_unique(KEYS[1], holder, KEYS[2], KEYS[7], KEYS[8]) then
      return {"held", holder}
    end
    claim = true
  end
end
local now = now_ms()
local due = tonumber(f[6])  -- "" (no run_after) reads as none
local delayed = due and due > now
redis.call("PERSIST", key)
redis.call("HSET", key, "state", "ready", "ready_ms", delayed and due or now)  -- waits anew
forget_progress(key, "finished_ms")
redis.call("ZREM", KEYS[3], id)
if delayed then
  redis.call("ZADD", KEYS[7], due, id)
else
  redis.call("ZADD", KEYS[2], ready_score(f[2]), id)
end
if claim and tonumber(f[4]) then  -- records stored before the window was kept have no unique_ms
  redis.call("SET", unique, id, "PX", f[4])
end
if redis.call("LLEN", KEYS[4]) == 0 then
  redis.call("RPUSH", KEYS[4], 1)
end
return "requeued"
