-- wf_group_create: makes a group, in the group's own slot, before any of
-- its members is enqueued.
-- KEYS:
--   1 group            the group's hash: n, type and payload of the
--                      callback, created_at, fired, enqueued, cancelled
--   2 group_members    "<type>:<id>" of every member (a set)
-- ARGV:
--   1 n                how many members
--   2 callback_type    the callback's type
--   3 payload          the callback's payload, as given
--   then member        "<type>:<id>" of each member (n of them)
-- Reply: {word}:
--   CREATED            a new group
--   EXISTS             the same group was made before (same n, callback
--                      and members): a producer that crashed may enqueue
--                      its members again (they are duplicates)
--   CONFLICT           a group of that name exists with other members
-- A group of zero members is refused by the producer (nothing would ever
-- end it).
local n = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  local g = redis.call('HMGET', KEYS[1], 'n', 'type', 'payload')
  if tonumber(g[1]) ~= n or g[2] ~= ARGV[2] or g[3] ~= ARGV[3] then
    return {'CONFLICT'}
  end
  for i = 4, #ARGV do
    if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 0 then
      return {'CONFLICT'}
    end
  end
  return {'EXISTS'}
end
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 +
                                  math.floor(tonumber(t[2]) / 1000))
redis.call('HSET', KEYS[1], 'n', ARGV[1], 'type', ARGV[2], 'payload',
           ARGV[3], 'created_at', now)
for i = 4, #ARGV, 1000 do
  redis.call('SADD', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
return {'CREATED'}
