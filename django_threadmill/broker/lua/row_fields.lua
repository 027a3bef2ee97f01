-- row_fields.lua: read some fields of records of one queue part, the first cut to its opening
-- bytes: the admin's task list needs only the task path a payload opens with.
-- KEYS     the records P:t:<id> read, not their prefix: while the queue's slot migrates a Redis
--          Cluster runs the call where they are, or refuses it (TRYAGAIN) while they are split;
--          the prefix alone was sent to the importing node, which read every record not moved
--          yet as gone (docs/scaling.md, Limits)
-- ARGV[1]  cut_bytes   most bytes of the cut field returned
-- ARGV[2]  cut         the number (1..n) of the field cut to cut_bytes (the payload); the
--                      others are returned whole
-- ARGV[3]  n           how many field names follow
-- Returns: per key, n + 1 values: the TYPE of its key ("hash"; "none": gone; another: a damaged
--          record, and n nils), then its n fields (nil where absent), the cut one cut.
-- Fence:   none: it reads only.
-- Types:   a record key of another type is answered with its type, not an error: a damaged
--          record costs its own row, not the page.
-- Clock:   none.
-- Cost:    a TYPE and an HMGET per record. Redis hands a hash field over whole, so the script
--          copies each payload, but only its first cut_bytes are sent back.
local cut_bytes = tonumber(ARGV[1])
local cut = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local fields = {}
for i = 4, 3 + n do
  fields[#fields + 1] = ARGV[i]
end
local reply = {}
for _, key in ipairs(KEYS) do
  local kind = redis.call("TYPE", key)["ok"]
  reply[#reply + 1] = kind
  local values = {}
  if kind == "hash" then
    values = redis.call("HMGET", key, unpack(fields))
    if values[cut] then
      values[cut] = string.sub(values[cut], 1, cut_bytes)
    end
  end
  for j = 1, n do
    reply[#reply + 1] = values[j] or false
  end
end
return reply
