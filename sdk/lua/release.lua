-- release: deletes a lock (or any key) only if it still holds our value,
-- for a batch dropped by a broken connection and for the instance key.
-- KEYS:
--   1 <key>
-- ARGV:
--   1 value            the value it must hold
--   2 mode             (optional) "owner": then value is the owner part of
--                      a lock value, and any value "<fence>-<owner>"
--                      matches: the lock of a begin whose reply was lost,
--                      whose fence the caller never learnt.
-- Reply: 1 if deleted, else 0.
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if ARGV[2] == 'owner' then
  local suffix = '-' .. ARGV[1]
  if #ARGV[1] > 0 and #v > #suffix and
     string.sub(v, -#suffix) == suffix then
    return redis.call('DEL', KEYS[1])
  end
  return 0
end
if v == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
