-- set_aside_expired.lua: set aside expired running attempts whose reap reply fields were not
-- UTF-8: the reaper could not read them (broker/raw_replies.py), so it cannot settle them, and
-- left leased they came back in every reap pass.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[3]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[4]  P:ready     zset: ready ids, looked at only when ARGV[1] is "1"
-- KEYS[5]  P:wake      list: wake-up tokens; one is pushed when a slot freed lets a task run
-- KEYS[6]  P:outbox    list: workflow steps set aside here, for their workflow to fail from
-- ARGV[1]  wake_on_free  "1" for a queue with a concurrency limit (finish.lua says why)
-- ARGV[2..] per attempt, 3 values: id and token (the bytes reap answered), reason
-- Returns: how many were set aside.
-- Fence:   state must be "running", the token the attempt's and its lease still expired, as
--          finish.lua fences the reaper's call: one settled, acked or renewed since stays.
--          One set aside is left as reap found it, as reap.lua leaves those it sets aside; a
--          workflow step set aside is pushed onto P:outbox too (common.lua set_aside_step).
-- Types:   P:damaged of another type, or P:outbox at a workflow step, fails the call before
--          any lease is dropped (a note written before it stays); P:ready or
--          P:wake, after: the records stay set aside, and no idle fetcher was woken.
-- Clock:   redis.call("TIME") only, for the deadline check and to date the entries.
local now = now_ms()
local taken = {}
for i = 2, #ARGV, 3 do
  local id = ARGV[i]
  local f = read_record(KEYS[1] .. id, "state", "token", "workflow")
  local deadline = redis.call("ZSCORE", KEYS[2], id)
  if f and f[1] == "running" and f[2] == ARGV[i + 1] and deadline
      and tonumber(deadline) <= now then
    taken[#taken + 1], taken[#taken + 2], taken[#taken + 3] = id, ARGV[i + 2], f[3] or false
  end
end
for i = 1, #taken, 3 do
  local id = taken[i]
  set_aside_step(KEYS[3], KEYS[6], KEYS[1] .. id, id, now, "reap", taken[i + 1],
    taken[i + 2] or nil)
end
for i = 1, #taken, 3 do
  redis.call("ZREM", KEYS[2], taken[i])
end
if slot_freed(ARGV[1], #taken, KEYS[4]) then
  wake_one(KEYS[5])
end
return #taken / 3
