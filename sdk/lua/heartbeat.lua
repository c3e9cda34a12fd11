-- heartbeat: holds a host's instance key while the host runs.
-- KEYS:
--   1 <instance>       the instance key
-- ARGV:
--   1 value            this host's value
--   2 ttl_ms
-- Reply: 1 when the key was free or already ours (its TTL is set again);
--       0 when another live host holds it.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
