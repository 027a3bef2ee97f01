-- cancel.lua: fail tasks that are still waiting (ready or delayed) with a cancellation error;
-- note on a workflow step its workflow stopped why, held by a worker or not.
-- KEYS[1]  P:t:        record prefix; the id is appended
-- KEYS[2]  P:ready     zset: ready ids by score
-- KEYS[3]  P:delayed   zset: delayed ids by due time in ms
-- KEYS[4]  P:done      zset: finished ids by finish time in ms
-- KEYS[5]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[6]  P:outbox    list: workflow steps that ended, for their workflow to advance
-- ARGV[1]  error_json    the Cancelled error, built by the client, for every task of the call
-- ARGV[2]  finished_ms   wall clock of the request, for display
-- ARGV[3]  result_ttl_ms finished records expire after this ("" keeps them forever); a
--                        workflow step's from its drain (forget_entry.lua)
-- ARGV[4..] per task, 3 values: its id; stop: "" (a task cancelled), or for a workflow step
--          its workflow stopped "cancelled" (the workflow was) or "not_run" (it recorded the
--          step so); stop_why: the workflow's why (stop set)
-- Returns: per task, in ARGV order: "cancelled" (a workflow step: its id is pushed onto
--          P:outbox and counted in its record's `outboxed`), or the state the task was in (nothing changes, but the stop noted),
--          "missing", or "damaged" (its record cannot be read: set aside and taken out of the
--          queue).
-- Fence:   state must be "ready"; a reserved or running attempt is never cancelled here. A
--          stop is noted on a ready, reserved or running step (fields stop, stop_why), for the
--          worker's look before it starts it, or retries it, once the workflow's hash expired
--          (docs/workflows.md, Cancel): it never creates a record.
-- Types:   a key of another type fails the call (WRONGTYPE, naming the key) before anything
--          is written: P:ready, P:delayed, P:done, P:outbox and P:damaged are checked first
--          (TYPE), as a task leaves one index for others and a call of many tasks may set one
--          aside after others were cancelled. Once the key is deleted, a cancel again works.
-- Clock:   redis.call("TIME"), read once per call, for the done index.
-- Cost:    the client sends at most CANCEL_BATCH tasks per call (broker/lifecycle.py): a call
--          of 500 steps held Redis 63-77 ms (docs/workflows.md, What it costs).
local wrong = wrong_kind(KEYS[2], "zset", KEYS[3], "zset", KEYS[4], "zset", KEYS[6], "list",
  KEYS[5], "hash")
if wrong then
  return redis.error_reply(wrong)
end

local now = now_ms()  -- the done index's score of every task of the call

-- Cancel the task `id`, noting `stop` and `stop_why` (a workflow step); return its answer.
local function cancel(id, stop, stop_why)
  local key = KEYS[1] .. id
  local f, refused = record_in_state(key, id, KEYS[5], "cancel", "ready", "nerrors", "workflow")
  if f or refused == "damaged" then  -- a record set aside leaves the indexes too
    redis.call("ZREM", KEYS[2], id)
    redis.call("ZREM", KEYS[3], id)
  end
  local stops = stop ~= ""
  if not f then
    if stops and (refused == "reserved" or refused == "running") then
      redis.call("HSET", key, "stop", stop, "stop_why", stop_why)
    end
    return refused
  end
  local attempt = stored_count(f[2]) + 1
  local fields = {"state", "failed", "error:" .. attempt, ARGV[1], "nerrors", attempt,
    "finished_ms", ARGV[2]}
  if stops then  -- a requeue reads it once the workflow's hash expired
    fields[9], fields[10], fields[11], fields[12] = "stop", stop, "stop_why", stop_why
  end
  redis.call("HSET", key, unpack(fields))
  redis.call("ZADD", KEYS[4], now, id)
  if f[3] then  -- a step expires once its workflow advanced from it (forget_entry.lua)
    push_step(KEYS[6], key, id)
  elseif ARGV[3] ~= "" then
    redis.call("PEXPIRE", key, ARGV[3])
  end
  return "cancelled"
end

local answers = {}
for i = 4, #ARGV, 3 do
  answers[#answers + 1] = cancel(ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
return answers
