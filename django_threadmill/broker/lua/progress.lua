-- progress.lua: write the latest progress report of running attempts into their records.
-- KEYS     per report, its record P:t:<id>, not the prefix: while the queue's slot migrates
--          a Redis Cluster runs the call where the records are, or refuses it (TRYAGAIN) while
--          they are split; the prefix alone was sent to the importing node, which fenced out
--          every report whose record had not moved yet (docs/scaling.md, Limits)
-- ARGV[1..] per report, 4 values: token, done, total ("" when not known), note
-- Returns: how many reports were written; the others were fenced out.
-- Fence:   state must be "reserved" or "running" and token must match: a report that comes
--          after its attempt finished, was reaped or was reserved again changes nothing. A
--          record that cannot be read is skipped (start, finish and renew set it aside).
-- Types:   only records are written, and one that holds no hash is skipped: no task moves
--          between indexes here, so no key of another type can leave one in none.
-- Clock:   redis.call("TIME") only: progress_ms, when the report was written.
-- Cost:    per task one HMGET and one HSET of the four progress fields.
local reported_at = tostring(now_ms())  -- formatted once per call
local written = 0
for k, key in ipairs(KEYS) do
  local i = 4 * k - 3
  local f = read_record(key, "state", "token")
  if f and f[2] == ARGV[i] and (f[1] == "reserved" or f[1] == "running") then
    redis.call("HSET", key, "progress_done", ARGV[i + 1], "progress_total", ARGV[i + 2],
      "progress_note", ARGV[i + 3], "progress_ms", reported_at)
    written = written + 1
  end
end
return written
