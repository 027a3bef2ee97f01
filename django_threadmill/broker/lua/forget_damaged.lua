-- forget_damaged.lua: drop a batch of a queue's damaged entries, answering exactly which.
-- KEYS[1]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- ARGV[1]  limit       most entries dropped by this call
-- Returns: {left, id, value, id, value, ...}: the entries this call dropped, read and dropped
--          in one step, and how many the hash still holds (past the limit, or set aside by
--          a script since). The keys the entries name are not touched.
-- Fence:   none: an operator's call; an entry set aside between two calls is answered by
--          the call that drops it, never dropped unanswered.
-- Types:   a P:damaged of another type fails the call (WRONGTYPE, naming the key) before
--          anything is dropped.
-- Clock:   none.
local wrong = wrong_kind(KEYS[1], "hash")
if wrong then
  return redis.error_reply(wrong)
end
local entries = redis.call("HRANDFIELD", KEYS[1], ARGV[1], "WITHVALUES")
local ids = {}
for i = 1, #entries, 2 do
  ids[#ids + 1] = entries[i]
end
call_chunked("HDEL", KEYS[1], ids)
table.insert(entries, 1, redis.call("HLEN", KEYS[1]))
return entries
