-- forget_entry.lua: take a workflow step's id out of its queue's outbox once its workflow has
-- advanced from it, and start its record's expiry then.
-- KEYS[1]  P:t:        record prefix; the id is appended
-- KEYS[2]  P:outbox    list: workflow steps that ended, for their workflow to advance
-- ARGV[1]  id
-- ARGV[2]  result_ttl_ms  the record expires after this ("" keeps it forever)
-- ARGV[3]  found_waiting  "1" when the drainer found the step waiting to run again (requeued
--                         after it ended), so it advanced no workflow from it; else ""
-- Returns: 1 when the entry was taken out of P:outbox, else 0 (another drainer took it out
--          first, or it is left for the next read: Fence).
-- Fence:   the record is given its expiry only while it is in a final state and no other entry
--          for it waits in P:outbox (a step requeued and ended again before a drain): finish.lua
--          and cancel.lua give a workflow step that ended none, since a record that expired
--          before its entry was drained could not tell the drainer which workflow to advance,
--          and that workflow never ended (docs/workflows.md, Exactly once). A record requeued
--          meanwhile waits again and is left persistent; one that is gone, or is not a hash,
--          is left as it is. An entry another drainer took out first (two drainers read the
--          same entries, as every worker drains its queues' whole outbox) leaves the record as
--          it is: that drainer counted it, and counting it again left a count of 1 that kept
--          the record from expiring once the step was requeued and ended again. An entry
--          read while its step waited (ARGV[3]) is left in P:outbox once the step has ended
--          again: entries are ids alone, so when another drainer took the one read out first,
--          the one LREM finds is the new end's, whose outcome no drainer has recorded yet, and
--          taking it out left the workflow open for good. The next read advances from it.
-- Cost:    the record's `outboxed` (its entries waiting, counted by finish.lua and cancel.lua)
--          says whether another waits; looking for one in P:outbox read the whole list, and
--          draining a long outbox cost Redis the square of its length. A record written before
--          the count (no `outboxed`) reads as one entry. A count that says another waits for a
--          step that ended is checked there (LPOS, rare: a step that ended twice before a
--          drain): a drainer of an earlier version, beside this one in a rolling deploy, took
--          entries out without counting them down, and the record would never expire.
-- Types:   a P:outbox of another type fails the call (WRONGTYPE) before anything is written.
-- Clock:   none.
local id = ARGV[1]
local key = KEYS[1] .. id
local f = read_record(key, "state", "outboxed")
local ended = f and (f[1] == "successful" or f[1] == "failed")
if ended and ARGV[3] == "1" then
  return 0
end
local removed = redis.call("LREM", KEYS[2], 1, id)
if removed == 0 or not (f and f[1]) then
  return removed
end
local waiting = (tonumber(f[2]) or 1) - removed
if waiting > 0 and ended and not redis.call("LPOS", KEYS[2], id) then
  waiting = 0  -- counted beside an earlier version's drain (Cost)
end
if waiting > 0 then
  redis.call("HSET", key, "outboxed", waiting)
  return removed
end
if f[2] then
  redis.call("HDEL", key, "outboxed")
end
if ARGV[2] ~= "" and ended then
  redis.call("PEXPIRE", key, ARGV[2])
end
return removed
