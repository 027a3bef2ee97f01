-- finish.lua: record the outcome of attempts: success, failure, or failure with a retry.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[3]  P:delayed   zset: delayed ids by due time in ms (retries wait here)
-- KEYS[4]  P:wake      list: wake-up tokens; one is pushed when a retry was scheduled
-- KEYS[5]  P:u:        unique key prefix; a finished task's `unique` digest is appended
-- KEYS[6]  P:ready     zset: ready ids, looked at only when ARGV[3] is "1"
-- KEYS[7]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[8]  P:outbox    list: workflow steps that ended, for their workflow to advance
-- ARGV[1]  worker_id      recorded if the attempt's start notice never went out; "" means the
--                         reaper settles, which wins only while the lease is still expired
-- ARGV[2]  result_ttl_ms  finished records expire after this ("" keeps them forever); a
--                         workflow step's from its drain (Expiry, below)
-- ARGV[3]  wake_on_free   "1" for a queue with a concurrency limit: a freed slot wakes a
--                         fetcher, since acquire held its ready tasks back without a baton
-- ARGV[4]  mark           the reaper's mark for this call, appended to the token of what it
--                         records: its retry of a call whose reply was lost passes the same
--                         mark and reads its outcome as recorded before (2), any other call as
--                         stale; "" from a worker, whose outcome keeps its token as it is
-- ARGV[5..] per task, 7 values: id, token, outcome ("successful" | "failed" | "retry"),
--           value (result JSON, or error JSON), started_ms, finished_ms (worker wall clock,
--           for display), retry_delay_ms (used by "retry" only)
-- Returns: per task in argument order: 1 recorded; 4 recorded, a workflow step that ended:
--          its id is in P:outbox (docs/workflows.md, Exactly once); 2 already recorded under
--          this token and mark (a duplicate, or a retried call whose first try landed); 0
--          stale: settled or held under another owner (reaped, released, reserved again,
--          cancelled); 3 damaged: the record cannot be read, so it is set aside and its
--          lease dropped; 5 missing: there is no record (Redis lost its data, or it was
--          deleted or expired), and nothing changes.
--          Metrics and the done index are not written here: the worker sends them on their own
--          clock (metrics.lua), so a result that arrives alone costs only what it must.
-- Index:   a finished id enters P:done with the worker's next metrics send (about a second
--          later, and when it stops): a worker killed before it loses that second of index
--          entries, never an outcome (docs/observability.md, Metrics and the done index).
-- Fence:   state must be "reserved" or "running" and token must match; anything else changes
--          nothing (an answer 2 rewrites the token as it is: see there). The reaper's call is
--          also stale when the worker renewed the lease after the reaper read it, and what the
--          reaper records keeps the token with its call's mark appended: a worker's late
--          call is stale, the reaper's retry under the same mark answers 2. A unique key is
--          released only while it still names the task.
-- Types:   a key of another type fails the call (WRONGTYPE). A task's first write goes to
--          P:outbox or P:delayed, so the task that meets such a key there is left as it was,
--          lease held, for a call after the key is deleted. Tasks before it in the call keep
--          their recorded outcome without the index updates done last (P:leases, P:wake):
--          an outcome unindexed, never lost (the reaper drops the lease entry as a
--          ghost; a retried call answers 2). The same from P:damaged, met at a damaged record.
-- Clock:   redis.call("TIME") only, and only when a call needs it: a retry's due time, the
--          reaper's deadline check, a record set aside, the expiry of a call of several tasks.
--          A lone success or failure reads no clock.
-- Expiry:  a lone task's record gets PEXPIRE. A call of several formats one PEXPIREAT time for
--          all of them: Redis rewrites every PEXPIRE into a PEXPIREAT for its replicas and AOF,
--          an allocation per task (docs/design.md, Redis keys and scripts). A workflow step that
--          ended gets none here: forget_entry.lua starts it once its workflow advanced from it,
--          since a record gone before the drain names no workflow to advance (docs/workflows.md,
--          Exactly once).
-- Cost:    per call EVALSHA and the lease ZREM (several tasks: and TIME); per task one HMGET,
--          one HSET, one PEXPIRE or PEXPIREAT (a workflow step that ended: an RPUSH and an
--          HINCRBY of its `outboxed` instead; a retry: an HDEL of its attempt's progress
--          instead of the expiry, and a ZADD; its due time goes in the HSET as `ready_ms`). So
--          a lone result costs 5 commands. The progress fields of a final outcome are left as
--          they are: the last report stays with the result.
local clock  -- the Redis time in ms, read at most once per call, by now()
local function now()
  clock = clock or now_ms()
  return clock
end
local ttl = ARGV[2] ~= "" and ARGV[2] or nil
local several = #ARGV > 4 + 7  -- four call values, then seven per task
local expires_at = ttl and several and tostring(now() + tonumber(ttl)) or nil
local reaping = ARGV[1] == ""
local retried = false

local reply = {}
local unleased = {}
local fields = {}  -- HSET arguments, reused for every task: entries past n are stale
for i = 5, #ARGV, 7 do
  local id, token, outcome, value = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local key = KEYS[1] .. id
  local left = token .. ARGV[4]  -- the token the outcome leaves on the record
  local f, problem = read_record(key, "state", "token", "nerrors", "unique", "workflow")
  if not f then
    set_aside(KEYS[7], id, now(), "finish", problem)
    f = {}
  end
  local live = f[2] == token and (f[1] == "reserved" or f[1] == "running")
  if live and reaping then
    local deadline = redis.call("ZSCORE", KEYS[2], id)
    live = deadline ~= false and tonumber(deadline) <= now()
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
      local attempt = stored_count(f[3]) + 1
      fields[n + 1], fields[n + 2] = "error:" .. attempt, value
      fields[n + 3], fields[n + 4] = "nerrors", attempt
      fields[n + 5], fields[n + 6] = "state", outcome == "retry" and "ready" or "failed"
      n = n + 6
    end
    if reaping then
      -- The reaper settles with the attempt's own token; marking it makes the worker's late
      -- call read as another owner's settlement, not as its own outcome recorded before.
      fields[n + 1], fields[n + 2] = "token", left
      n = n + 2
    end
    -- The task's first write goes to the index it enters (P:outbox, P:delayed): when that key
    -- holds another type, the call fails with this record untouched and its lease held.
    local step_ended = f[5] and outcome ~= "retry"
    if step_ended then
      push_step(KEYS[8], key, id)  -- in the call that records the outcome: never lost
    end
    if outcome == "retry" then
      local due = now() + tonumber(ARGV[i + 6])
      redis.call("ZADD", KEYS[3], due, id)
      -- It is ready again from its due time: the queue's oldest-READY age counts from there
      -- (docs/admin.md, Queues), not from its first enqueue.
      fields[n + 1], fields[n + 2] = "ready_ms", due
      n = n + 2
      -- Progress is the attempt's: the next one starts without any (a final outcome keeps it).
      forget_progress(key)
      retried = true
    else
      fields[n + 1], fields[n + 2] = "finished_ms", ARGV[i + 5]
      n = n + 2
    end
    redis.call("HSET", key, unpack(fields, 1, n))
    -- A step that ended expires once its workflow advanced from it (forget_entry.lua).
    local expires = outcome ~= "retry" and not step_ended
    if expires and expires_at then
      redis.call("PEXPIREAT", key, expires_at)
    elseif expires and ttl then
      redis.call("PEXPIRE", key, ttl)
    end
    -- pcall: a unique key of another type names no task; it is left for enqueue to replace.
    if f[4] and outcome ~= "retry" and redis.pcall("GET", KEYS[5] .. f[4]) == id then
      redis.call("DEL", KEYS[5] .. f[4])
    end
    unleased[#unleased + 1] = id
    reply[#reply + 1] = step_ended and 4 or 1
  elseif problem then
    unleased[#unleased + 1] = id
    reply[#reply + 1] = 3
  elseif f[2] == left and (f[1] == "successful" or f[1] == "failed" or f[1] == "ready") then
    -- Rewritten as it is, so the call propagates: a WAIT confirms only its connection's
    -- writes, and a retry on a fresh connection that wrote nothing would be confirmed at once
    -- while the first try's write may still be short of a replica (docs/scaling.md,
    -- Durability modes).
    redis.call("HSET", key, "token", left)
    reply[#reply + 1] = 2  -- only this lease's outcome leaves its token on a settled record
  else
    reply[#reply + 1] = f[1] and 0 or 5  -- a record has a state; no state, no record
  end
end
call_chunked("ZREM", KEYS[2], unleased)
-- An idle fetcher learns a retry's due time only from acquire: wake one, once per call.
local freed = slot_freed(ARGV[3], #unleased, KEYS[6])
if retried or freed then
  wake_one(KEYS[4])
end
return reply
