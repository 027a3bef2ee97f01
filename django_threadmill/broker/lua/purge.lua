-- purge.lua: delete finished results of a queue, oldest first, a batch at a time.
-- KEYS[1]  P:t:        record prefix; each finished id is appended
-- KEYS[2]  P:done      zset: finished ids by finish time in ms
-- KEYS[3]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- ARGV[1]  offset      where in P:done to start (ids kept by the state filter are skipped)
-- ARGV[2]  limit       most ids looked at by this call
-- ARGV[3]  state       "successful", "failed" or "" for both
-- Returns: {deleted, unindexed, looked_at, set_aside}; call again at offset + looked_at -
--          unindexed while looked_at == limit. Records that cannot be read are set aside (and
--          unindexed), never deleted: an operator looks at them first.
-- Fence:   only records in a final state are deleted; an id whose record is gone or was
--          requeued is just unindexed.
-- Types:   a P:done of another type fails the call at its first read, before anything is
--          written. A P:damaged of another type fails it at a record to set aside, after some
--          finished records may be deleted and before their ids leave P:done: an id whose
--          record is gone is unindexed by the next call. No task waiting or held is touched.
-- Clock:   redis.call("TIME") only, and only to date a record set aside.
local offset = tonumber(ARGV[1])
local ids = redis.call("ZRANGE", KEYS[2], offset, offset + tonumber(ARGV[2]) - 1)
local deleted, unindexed, set_aside_count = 0, {}, 0
for _, id in ipairs(ids) do
  local key = KEYS[1] .. id
  local f, problem = read_record(key, "state")
  local state = f and f[1]
  local final = state == "successful" or state == "failed"
  if not f then
    set_aside(KEYS[3], id, now_ms(), "purge", problem)
    set_aside_count = set_aside_count + 1
  elseif final and (ARGV[3] == "" or ARGV[3] == state) then
    redis.call("DEL", key)
    deleted = deleted + 1
  end
  if not final or ARGV[3] == "" or ARGV[3] == state then
    unindexed[#unindexed + 1] = id
  end
end
call_chunked("ZREM", KEYS[2], unindexed)
return {deleted, #unindexed, #ids, set_aside_count}
