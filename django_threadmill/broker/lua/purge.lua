-- purge.lua: delete finished results of a queue, oldest first, a batch at a time.
-- KEYS[1]  P:t:        record prefix; each finished id is appended
-- KEYS[2]  P:done      zset: finished ids by finish time in ms
-- ARGV[1]  offset      where in P:done to start (ids kept by the state filter are skipped)
-- ARGV[2]  limit       most ids looked at by this call
-- ARGV[3]  state       "successful", "failed" or "" for both
-- Returns: {deleted, unindexed, looked_at}; call again at offset + looked_at - unindexed
--          while looked_at == limit.
-- Fence:   only records in a final state are deleted; an id whose record is gone or was
--          requeued is just unindexed.
-- Clock:   not used.
local offset = tonumber(ARGV[1])
local ids = redis.call("ZRANGE", KEYS[2], offset, offset + tonumber(ARGV[2]) - 1)
local deleted, unindexed = 0, 0
for _, id in ipairs(ids) do
  local key = KEYS[1] .. id
  local state = redis.call("HGET", key, "state")
  local final = state == "successful" or state == "failed"
  if final and (ARGV[3] == "" or ARGV[3] == state) then
    redis.call("DEL", key)
    deleted = deleted + 1
  end
  if not final or ARGV[3] == "" or ARGV[3] == state then
    redis.call("ZREM", KEYS[2], id)
    unindexed = unindexed + 1
  end
end
return {deleted, unindexed, #ids}
