-- release: deletes a lock (or any key) only if it still holds our value,
-- for a batch dropped by a broken connection and for the instance key.
-- KEYS: 1 the key.
-- ARGV: 1 the value it must hold.
-- Reply: 1 if deleted, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
