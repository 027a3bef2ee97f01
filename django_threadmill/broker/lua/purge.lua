-- purge.lua: delete finished results of a queue, oldest first, a batch at a time.
-- KEYS[1]  P:t:        record prefix; each finished id is appended
-- KEYS[2]  P:done      zset: finished ids by finish time in ms
-- KEYS[3]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[4]  P:outbox    list: workflow steps that ended, for their workflow to advance
-- ARGV[1]  after       the last id the previous call kept in P:done ("": start at the oldest)
-- ARGV[2]  after_score its score; where to start if it left P:done meanwhile
-- ARGV[3]  limit       most ids looked at by this call
-- ARGV[4]  state       "successful", "failed" or "" for both
-- Returns: {deleted, looked_at, set_aside, kept, kept_score}: kept is the last id this call
--          left in P:done ("" if none), to pass as after, with its score, while looked_at ==
--          limit. Resuming after an id, not at an offset, skips nothing when older entries
--          leave P:done between calls (another purge, a requeue, the done index's trim), nor
--          when that id itself leaves it or finishes again (its score is checked).
--          Records that cannot be read are set aside (and unindexed), never deleted: an
--          operator looks at them first.
-- Fence:   only records in a final state are deleted; an id whose record is gone or was
--          requeued is just unindexed. A workflow step still in P:outbox is kept, as one of
--          another state is: its workflow has not advanced from it, and a drainer that found
--          its record gone could not tell which workflow to advance, which then never ended
--          (docs/workflows.md, Exactly once). A later purge deletes it.
-- Types:   a P:outbox of another type holds no step, so it keeps none (drainers skip it).
--          A P:done of another type fails the call (WRONGTYPE, naming the key) before anything
--          is written (TYPE), and so does a P:damaged of another type when a record of the
--          call must be set aside: every record is read before the first write, so that none
--          is deleted, uncounted, by a call that then fails. No task waiting or held is touched.
-- Clock:   redis.call("TIME") only, and only to date a record set aside.
-- Cost:    P:outbox is read once, at the first workflow step met, and only while it holds at
--          most OUTBOX_READ ids (drainers empty it within seconds); a longer one (a big group
--          ending, no worker draining) is not read, and every workflow step met is kept, for a
--          later purge. Read whole, an outbox of 200,000 held Redis for 130-220 ms a call, and
--          for each call of a purge that met a step.
local wrong = wrong_kind(KEYS[2], "zset")
if wrong then
  return redis.error_reply(wrong)
end

local start = 0
if ARGV[1] ~= "" then
  -- Resume after `after` where it was: one that left P:done, or finished again since (requeued,
  -- its score now the newest), is looked for by its old score; at its new rank, every result
  -- between was skipped. Entries of that score are looked at again: kept again, harmless.
  local still_there = tonumber(redis.call("ZSCORE", KEYS[2], ARGV[1])) == tonumber(ARGV[2])
  start = still_there and redis.call("ZRANK", KEYS[2], ARGV[1]) + 1
    or redis.call("ZCOUNT", KEYS[2], "-inf", "(" .. ARGV[2])
end
local entries = redis.call("ZRANGE", KEYS[2], start, start + tonumber(ARGV[3]) - 1, "WITHSCORES")

-- Most P:outbox ids a call reads; past that many, it cannot tell which steps it holds.
local OUTBOX_READ = 1000
-- The ids in P:outbox as a set, read at the first workflow step met; true when it holds more
-- than OUTBOX_READ: every step is then taken for one its workflow has yet to advance from.
local advancing
-- Whether the record `f` (state, workflow) of `id` is a step its workflow has yet to advance from.
local function not_advanced(id, f)
  if not f[2] then
    return false
  end
  if advancing == nil then
    local size = redis.pcall("LLEN", KEYS[4])
    advancing = type(size) == "number" and size > OUTBOX_READ or {}
    if advancing ~= true then
      local ids = redis.pcall("LRANGE", KEYS[4], 0, OUTBOX_READ - 1)
      for _, entry in ipairs(ids.err and {} or ids) do
        advancing[entry] = true
      end
    end
  end
  return advancing == true or advancing[id] == true
end

-- Each record (state, workflow), or false and why it cannot be read, in the order of `entries`.
local records, problems, unreadable = {}, {}, false
for i = 1, #entries, 2 do
  local f, problem = read_record(KEYS[1] .. entries[i], "state", "workflow")
  records[i], problems[i] = f or false, problem
  unreadable = unreadable or not f
end
wrong = unreadable and wrong_kind(KEYS[3], "hash")
if wrong then
  return redis.error_reply(wrong)
end

local deleted, unindexed, set_aside_count, kept, kept_score = 0, {}, 0, "", ""
for i = 1, #entries, 2 do
  local id, f = entries[i], records[i]
  local state = f and f[1]
  local final = state == "successful" or state == "failed"
  local wanted = final and (ARGV[4] == "" or ARGV[4] == state) and not not_advanced(id, f)
  if not f then
    set_aside(KEYS[3], id, now_ms(), "purge", problems[i])
    set_aside_count = set_aside_count + 1
  elseif wanted then
    redis.call("DEL", KEYS[1] .. id)
    deleted = deleted + 1
  end
  if not final or wanted then
    unindexed[#unindexed + 1] = id
  else
    kept, kept_score = id, entries[i + 1]
  end
end
call_chunked("ZREM", KEYS[2], unindexed)
return {deleted, #entries / 2, set_aside_count, kept, kept_score}
