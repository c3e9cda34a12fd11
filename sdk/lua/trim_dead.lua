-- trim_dead: keeps a dead set at dead_max.
-- KEYS:
--   1 dead
--   then dead:<id>     of each id (same order).
-- ARGV:
--   1 dead_max
--   then id            the ids (the oldest, as read before the call).
-- Reply: the number removed.
-- Removes the ids, with their dead records, while the set is over
-- dead_max.
local max = tonumber(ARGV[1])
local removed = 0
for i = 2, #ARGV do
  if redis.call('ZCARD', KEYS[1]) <= max then break end
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('DEL', KEYS[i])
    removed = removed + 1
  end
end
return removed
