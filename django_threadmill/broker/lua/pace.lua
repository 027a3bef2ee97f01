-- pace.lua: take a rate-limited queue's next start, or say how long until it comes.
-- KEYS[1]  P:paced     string: the Redis time in ms, to the µs, before which no task of the
--                      queue starts (whole ms as earlier versions wrote it read the same)
-- KEYS[2]  P:paused    string: present while the queue is paused (broker/pausing.py)
-- ARGV[1]  interval_us µs between two starts under the queue's rate
-- Returns: 0 when the caller may start its task now (the next start is then one interval
--          away), -1 when the queue is paused (the caller hands its task back to READY), else
--          the µs to wait before asking again.
-- Why:     acquire.lua spaces reservations, but a reserved task can wait in a worker's buffer
--          while its threads are busy, and tasks reserved apart would then start together; a
--          worker asks here right before a task of such a queue starts (docs/schedules.md,
--          Per-queue limits).
-- Paused:  a task reserved before the pause that waited for its turn has not started: it
--          must not start at its turn, up to an interval into the pause (an hour for "1/h"),
--          but wait READY with the others for the resume (docs/lifecycle.md, Pausing a
--          queue). The key acquire.lua checks; nothing is written.
-- Fence:   none: a turn is taken only by its caller, right before its task starts; a turn
--          taken by a worker that then dies goes unused.
-- Clock:   redis.call("TIME") only, in µs. A time set under a slower rate (a deploy raised it)
--          is brought to one interval of this rate from now (common.lua, next_token_us).
if redis.call("EXISTS", KEYS[2]) == 1 then
  return -1
end
local now = now_us()
local interval = tonumber(ARGV[1])
local next_start = next_token_us(KEYS[1], now, interval)
if next_start > now then
  return next_start - now
end
set_token_us(KEYS[1], now + interval)
return 0
