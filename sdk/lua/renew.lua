-- renew: keeps a live worker's running batch its own.
-- KEYS:
--   1 stream
--   2 running          the concurrency slots (see begin.lua)
--   then lock:<id>     of each task.
-- ARGV:
--   1 group
--   2 consumer
--   3 lock_ttl_ms
--   4 slot_offset      0 when the type has no concurrency_limit; else the
--                      length of "<prefix>:{<type>}:lock:" (an id is the
--                      rest of its lock key)
--   then entry         the entry id of each task,
--   then token         the lock token of each task ("" for no lock), in
--                      the order of the lock keys.
-- Reply: two integers per task, in order: the entry's idle time in ms
--        before it was renewed (-1: not pending under the consumer), and
--        the lock's time to live in ms before it was renewed (-1: no
--        token given; -2: the lock no longer holds the token).
-- Each entry still pending under the consumer gets its idle time reset
-- (XCLAIM JUSTID: no delivery counted), so no other host takes it over,
-- and each lock still holding its token lives lock_ttl longer, with its
-- concurrency slot when the type has a limit. The times
-- before the renewal say how close each lease came to running out.
local n = #KEYS - 2
local slot_offset = tonumber(ARGV[4])
local out, expiry = {}, nil
for i = 1, n do
  local entry = ARGV[4 + i]
  local token = ARGV[4 + n + i]
  local idle = -1
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], 'IDLE', 0, entry, entry,
                       1, ARGV[2])
  if #p > 0 then
    idle = p[1][3]
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, entry, 'JUSTID')
  end
  local ttl = -1
  if token ~= '' then
    local lock = KEYS[2 + i]
    if redis.call('GET', lock) == token then
      ttl = redis.call('PTTL', lock)
      redis.call('PEXPIRE', lock, ARGV[3])
      if slot_offset > 0 then
        if not expiry then
          local time = redis.call('TIME')
          expiry = tonumber(time[1]) * 1000 +
                   math.floor(tonumber(time[2]) / 1000) + tonumber(ARGV[3])
        end
        redis.call('ZADD', KEYS[2], 'XX', expiry,
                   string.sub(lock, slot_offset + 1) .. ' ' .. token)
      end
    else
      ttl = -2
    end
  end
  out[2 * i - 1] = idle
  out[2 * i] = ttl
end
return out
