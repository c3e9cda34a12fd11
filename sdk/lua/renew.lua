-- renew: keeps a live worker's running batch its own.
-- KEYS: 1 stream, then lock:<id> of each task.
-- ARGV: 1 group, 2 consumer, 3 lock_ttl_ms, then the entry id of each
--       task, then the lock token of each task ("" for no lock), in the
--       order of the lock keys.
-- Reply: the number of entries renewed.
-- Each entry still pending under the consumer gets its idle time reset
-- (XCLAIM JUSTID: no delivery counted), so no other host takes it over,
-- and each lock still holding its token lives lock_ttl longer.
local n = #KEYS - 1
local renewed = 0
for i = 1, n do
  local entry = ARGV[3 + i]
  local token = ARGV[3 + n + i]
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], entry, entry, 1, ARGV[2])
  if #p > 0 then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, entry, 'JUSTID')
    renewed = renewed + 1
  end
  if token ~= '' and redis.call('GET', KEYS[1 + i]) == token then
    redis.call('PEXPIRE', KEYS[1 + i], ARGV[3])
  end
end
return renewed
