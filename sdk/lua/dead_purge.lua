-- dead_purge: deletes one dead task (wharf dead purge).
-- KEYS: 1 dead, 2 task:<id>.
-- ARGV: 1 id.
-- Reply: 1 if the id was dead (it and its envelope are gone), else 0.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
