-- due: the delayed ids whose time has come, by Redis TIME (so hosts with
-- skewed clocks agree). Read-only: promote moves them.
-- KEYS:
--   1 delayed
-- ARGV:
--   1 limit            the most ids to return
-- Reply: an array of ids, earliest due first.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now,
                  'LIMIT', 0, tonumber(ARGV[1]))
