-- dead_purge: deletes one dead task (wharf dead purge).
-- KEYS:
--   1 dead
--   2 dead:<id>
--   3 task:<id>
--   4 delayed
-- ARGV:
--   1 id
-- Reply: 1 if the id was dead (it and its record are gone), else 0.
-- A record written before dead tasks had their own key is task:<id>: it
-- goes too, unless the id waits in the delayed set (then task:<id> is the
-- envelope of a new run of the id, not the dead one's).
-- The delayed set is read before the first write: a script is not rolled
-- back, and a delayed key of the wrong kind would fail between writes.
local waiting = redis.call('ZSCORE', KEYS[4], ARGV[1])
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('DEL', KEYS[2])
  if not waiting then
    redis.call('DEL', KEYS[3])
  end
  return 1
end
return 0
