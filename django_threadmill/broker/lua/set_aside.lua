-- set_aside.lua: set aside tasks one acquire reserved whose reply fields were not UTF-8: the
-- worker could not read them (broker/raw_replies.py), so they must not run, nor wait out
-- their reservation to come back at the head of P:ready.
-- KEYS[1]  P:t:        record prefix; each task id is appended
-- KEYS[2]  P:leases    zset: reserved and running ids by lease deadline in ms
-- KEYS[3]  P:damaged   hash: ids set aside -> "<ms> <script>: <reason>"
-- KEYS[4]  P:ready     zset: ready ids, looked at only when ARGV[2] is "1"
-- KEYS[5]  P:wake      list: wake-up tokens; one is pushed when a slot freed lets a task run
-- KEYS[6]  P:outbox    list: workflow steps set aside here, for their workflow to fail from
-- ARGV[1]  token of the acquire call that reserved them
-- ARGV[2]  wake_on_free  "1" for a queue with a concurrency limit (finish.lua says why)
-- ARGV[3..] per task, 2 values: id (the bytes acquire answered), reason
-- Returns: how many were set aside.
-- Fence:   state must be "reserved" and the token the call's; a record another call holds
--          stays. One set aside reads as acquire found it: state "ready", no token. A workflow
--          step set aside is pushed onto P:outbox too (common.lua set_aside_step).
-- Types:   P:damaged of another type, or P:outbox at a workflow step, fails the call before
--          any record changes (a note written before it stays); P:ready or P:wake, after: the
--          records stay set aside, and no idle fetcher was woken.
-- Clock:   redis.call("TIME") only, to date the entries.
local now = now_ms()
local taken = {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local f = read_record(KEYS[1] .. id, "state", "token", "workflow")
  if f and f[1] == "reserved" and f[2] == ARGV[1] then
    taken[#taken + 1], taken[#taken + 2], taken[#taken + 3] = id, ARGV[i + 1], f[3] or false
  end
end
for i = 1, #taken, 3 do
  local id = taken[i]
  set_aside_step(KEYS[3], KEYS[6], KEYS[1] .. id, id, now, "acquire", taken[i + 1],
    taken[i + 2] or nil)
end
for i = 1, #taken, 3 do
  redis.call("HSET", KEYS[1] .. taken[i], "state", "ready", "token", "")
  redis.call("ZREM", KEYS[2], taken[i])
end
if slot_freed(ARGV[2], #taken, KEYS[4]) then
  wake_one(KEYS[5])
end
return #taken / 3
