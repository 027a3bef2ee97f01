-- metrics.lua: add metric increments on their own, for a finish call that had stale items.
-- KEYS[1]  P:metrics            hash: lifetime counters and buckets per "<path>|<name>"
-- KEYS[2]  P:metrics:<minute>   hash: the same for one minute; expires
-- KEYS[3]  P:metrics:paths      set: task paths counted under their own name
-- ARGV[1]  cap            most task paths in KEYS[3]; later ones are counted as "other"
-- ARGV[2]  minute_ttl_ms  expiry of KEYS[2]
-- ARGV[3..] per task path: path, m, n, then m pairs for both hashes and n for KEYS[1] only
-- Returns: 1.
-- Fence:   none: the client sends only the increments of outcomes finish.lua recorded.
-- Clock:   none.
add_metrics(KEYS[1], KEYS[2], KEYS[3], ARGV, 3, tonumber(ARGV[1]), ARGV[2])
return 1
