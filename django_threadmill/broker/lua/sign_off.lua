-- sign_off.lua: say a worker process stopped: not counted live, its host still last seen.
-- KEYS[1]  P:workers   zset: worker ids by last renewal in ms
-- KEYS[2]  P:held      hash: worker id -> number of tasks it held at its last renewal
-- KEYS[3]  P:threads   hash: worker id -> its live worker threads at its last renewal
-- KEYS[4]  P:stopped   zset: hosts by when a worker process of theirs last signed off, in ms
-- ARGV[1]  worker_id   the stopping process
-- ARGV[2]  host        its host, as its worker id names it
-- ARGV[3]  forget_ms   hosts whose last sign-off is older than this are dropped from P:stopped,
--                      and P:stopped itself this long after the last
-- Returns: nothing.
-- Fence:   none: a process signs off itself as it exits, or its supervisor signs off one that
--          died; either names one process, and a second sign-off only moves its host's time.
-- Clock:   redis.call("TIME") only.
local now = now_ms()
redis.call("ZREM", KEYS[1], ARGV[1])
redis.call("HDEL", KEYS[2], ARGV[1])
redis.call("HDEL", KEYS[3], ARGV[1])
redis.call("ZADD", KEYS[4], now, ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[4], "-inf", now - tonumber(ARGV[3]))
redis.call("PEXPIRE", KEYS[4], ARGV[3])
