-- advance.lua: a workflow step settled, or the workflow was cancelled: record it, and say which
-- steps may be enqueued now (docs/workflows.md, Exactly once).
-- KEYS[1]  W         hash: one workflow; its fields are listed in broker/workflows.py
-- ARGV[1]  step      the settled step's index, or "" for the workflow as a whole (cancel)
-- ARGV[2]  outcome   "successful" | "failed" | "cancelled"
-- ARGV[3]  value     the step's result JSON (successful: kept only when a step takes it), else
--                    why it did not succeed
-- ARGV[4]  ttl_ms    a workflow that ended expires after this ("" keeps it)
-- Returns: {status, then the indices of the steps due: every input succeeded, not yet marked
--          enqueued}; status is the workflow's ("open", "successful", "failed", "cancelled"),
--          or "missing" when it is unknown (expired, or written by no workflow), or "damaged"
--          when its key holds no hash or the hash no step count (nothing is written then). A
--          step that lists no inputs ends the workflow as failed, naming why. A cancel returns
--          the status the workflow had before; when it is cancelled now, then its why and the
--          indices of the steps marked due or enqueued, for the caller to stop.
-- Fence:   a step's outcome is recorded once (HSETNX). A second report of it (a drain retried
--          after its drainer died) records nothing but returns the steps still due, so the
--          next drainer enqueues what the dead one may not have; enqueue skips an id that
--          exists, and step ids are fixed, so each step is stored once. A step that failed (after
--          its retries) or was cancelled ends the workflow as failed, and a cancel as cancelled:
--          nothing is due any more, steps already enqueued still run, the others are recorded
--          as not run with why, save those that ended (s:i): a step stored and not yet marked
--          (a launch's or a drainer's store and mark are two round trips) may have run already.
-- Types:   one key: a W of another type answers "damaged" before anything is written, so no
--          workflow is left half advanced (nor any task: a step is enqueued by the caller).
-- Clock:   none: a workflow's times are its steps' (their records), and its expiry a TTL.
-- Expiry:  a launch creates W with a TTL, made persistent once its first steps are marked
--          (mark.lua); an open W is made persistent here too, since a step that ended was
--          stored, so a launch that died between storing its steps and marking them leaves a
--          workflow that goes on (docs/workflows.md, Semantics).
-- Cost:    whether a step's inputs all succeeded is read on from where the last look stopped
--          (cur:j), so a group of N members costs its members about N reads in all, where
--          reading every input on each report cost N^2/2. Only s:i is trusted, which every
--          version of this script writes, so workers of an earlier version may advance the
--          same workflow.
local w = KEYS[1]
local status = redis.pcall("HGET", w, "status")
if type(status) == "table" and status.err then
  return {"damaged"}  -- a key of another type: something else wrote it
elseif not status then
  return {"missing"}
end
-- Read before anything is written: a hash without a step count was written by something else.
local n = tonumber(redis.call("HGET", w, "n"))
if not n then
  return {"damaged"}
end
local step, outcome, value = ARGV[1], ARGV[2], ARGV[3]
if status == "open" then
  redis.call("PERSIST", w)
end

-- Give the workflow its final status; it expires after ttl_ms from now.
local function finish(final)
  status = final
  redis.call("HSET", w, "status", final)
  if ARGV[4] ~= "" then
    redis.call("PEXPIRE", w, ARGV[4])
  end
end

-- End the workflow: steps neither marked enqueued nor ended are recorded as not run, with why.
-- One that ended unmarked was stored and ran before its mark: its mark then cancels nothing.
local function stop(final, why)
  redis.call("HSET", w, "why", why)
  for j = 0, n - 1 do
    local marked, ended = unpack(redis.call("HMGET", w, "e:" .. j, "s:" .. j))
    if marked ~= "enqueued" and not ended then
      redis.call("HSETNX", w, "x:" .. j, why)
    end
  end
  finish(final)
end

-- A cancel also says which steps to stop (every one marked due or enqueued) and why, in this
-- call: the hash may expire (a result_ttl shorter than a round trip) before it is read again.
if step == "" then
  local before = status
  if before == "open" then
    stop("cancelled", value)
  end
  if status ~= "cancelled" then
    return {before}
  end
  local reply = {before, redis.call("HGET", w, "why") or value}
  for j = 0, n - 1 do
    if redis.call("HEXISTS", w, "e:" .. j) == 1 then
      reply[#reply + 1] = j
    end
  end
  return reply
end

if redis.call("HSETNX", w, "s:" .. step, outcome) == 1 then
  if outcome == "successful" then
    -- Kept for the steps that take it as input (next:i); its record holds it anyway.
    if redis.call("HEXISTS", w, "next:" .. step) == 1 then
      redis.call("HSET", w, "v:" .. step, value)
    end
    local succeeded = redis.call("HINCRBY", w, "succeeded", 1)
    if status == "open" and succeeded == n then
      finish("successful")
    end
  elseif status == "open" then
    stop("failed", "step " .. step .. " " .. outcome .. ": " .. value)
  end
end

-- Whether every input of step j succeeded (nil when its inputs are not stored). Its inputs
-- (after:j) are read in order from the position where the last look found one that had not
-- (cur:j, 1 when none looked yet), and that position is kept: an input passed once has
-- succeeded for good (HSETNX above).
local function inputs_done(j)
  local inputs = redis.call("HGET", w, "after:" .. j)
  if not inputs then
    return nil
  end
  local start = tonumber(redis.call("HGET", w, "cur:" .. j)) or 1
  local at, done = start, true
  while true do
    local first, last, i = inputs:find("(%d+)", at)
    if not first then
      break
    end
    if redis.call("HGET", w, "s:" .. i) ~= "successful" then
      done = false
      break
    end
    at = last + 1
  end
  if at ~= start then
    redis.call("HSET", w, "cur:" .. j, at)
  end
  return done
end

local reply = {status}
if status ~= "open" or redis.call("HGET", w, "s:" .. step) ~= "successful" then
  return reply
end
for j in (redis.call("HGET", w, "next:" .. step) or ""):gmatch("%d+") do
  if redis.call("HGET", w, "e:" .. j) ~= "enqueued" then
    local done = inputs_done(j)
    if done == nil then  -- no step marked due above is enqueued: stop records it as not run
      stop("failed", "step " .. j .. " not enqueued: its inputs (after:" .. j .. ") are missing; "
        .. "something other than django-threadmill wrote the workflow's hash")
      return {status}
    elseif done then
      redis.call("HSET", w, "e:" .. j, "due")
      reply[#reply + 1] = tonumber(j)
    end
  end
end
return reply
