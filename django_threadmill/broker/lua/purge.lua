-- purge.lua: delete finished results of a queue, oldest first, a batch at a time.
-- KEYS[1]  P:t:        record prefix; each finished id is appended
-- KEYS[2]  P:done      zset: finished ids by finish time in ms
-- KEYS[3]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- ARGV[1]  after       the last id the previous call kept in P:done ("": start at the oldest)
-- ARGV[2]  after_score its score; where to start if it left P:done meanwhile
-- ARGV[3]  limit       most ids looked at by this call
-- ARGV[4]  state       "successful", "failed" or "" for both
-- Returns: {deleted, looked_at, set_aside, kept, kept_score}: kept is the last id this call
--          left in P:done ("" if none), to pass as after, with its score, while looked_at ==
--          limit. Resuming after an id, not at an offset, skips nothing when older entries
--          leave P:done between calls (another purge, a requeue, the done index's trim).
--          Records that cannot be read are set aside (and unindexed), never deleted: an
--          operator looks at them first.
-- Fence:   only records in a final state are deleted; an id whose record is gone or was
--          requeued is just unindexed.
-- Types:   a P:done of another type fails the call at its first read, before anything is
--          written. A P:damaged of another type fails it at a record to set aside, after some
--          finished records may be deleted and before their ids leave P:done: an id whose
--          record is gone is unindexed by the next call. No task waiting or held is touched.
-- Clock:   redis.call("TIME") only, and only to date a record set aside.
local start = 0
if ARGV[1] ~= "" then
  -- Entries of the same score as a vanished `after` are looked at again: kept again, harmless.
  start = redis.call("ZRANK", KEYS[2], ARGV[1])
  start = start and start + 1 or redis.call("ZCOUNT", KEYS[2], "-inf", "(" .. ARGV[2])
end
local entries = redis.call("ZRANGE", KEYS[2], start, start + tonumber(ARGV[3]) - 1, "WITHSCORES")
local deleted, unindexed, set_aside_count, kept, kept_score = 0, {}, 0, "", ""
for i = 1, #entries, 2 do
  local id = entries[i]
  local key = KEYS[1] .. id
  local f, problem = read_record(key, "state")
  local state = f and f[1]
  local final = state == "successful" or state == "failed"
  if not f then
    set_aside(KEYS[3], id, now_ms(), "purge", problem)
    set_aside_count = set_aside_count + 1
  elseif final and (ARGV[4] == "" or ARGV[4] == state) then
    redis.call("DEL", key)
    deleted = deleted + 1
  end
  if not final or ARGV[4] == "" or ARGV[4] == state then
    unindexed[#unindexed + 1] = id
  else
    kept, kept_score = id, entries[i + 1]
  end
end
call_chunked("ZREM", KEYS[2], unindexed)
return {deleted, #entries / 2, set_aside_count, kept, kept_score}
