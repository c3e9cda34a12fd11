-- begin: takes the locks of a batch of one queue, after the result cache
-- check.
-- KEYS: 1 fence, then result:<id> of each task, then lock:<id> of each
--       task (same order).
-- ARGV: 1 lock_ttl_ms, 2 owner (16 hex digits the caller drew at random
--       for this call).
-- Reply: one element per task, in order: 0 when its result is cached;
--       else it draws a fresh fencing token from fence and takes the lock
--       with SET NX PX: the lock's value "<token>-<owner>" (a string), or
--       -1 when another run holds the lock.
-- The owner part lets the caller release the locks of a call whose reply
-- it never read (the connection broke): it knows the owner, not the
-- tokens (see release.lua).
-- Per call, not per task: one EXISTS over every result key answers the
-- common case (none cached), and one INCRBY draws the tokens: the same
-- tokens, in the same order, as one INCR per task. A token is formatted as
-- an integer (%d, cheap) rather than left to Redis's %.17g. Only the first
-- write can fail (out of memory, before anything was written): then the
-- call fails as a whole.
local call, format, keys, ttl = redis.call, string.format, KEYS, ARGV[1]
local owner = ARGV[2]
local n = (#keys - 1) / 2
local cached, fresh = nil, n
if call('EXISTS', unpack(keys, 2, n + 1)) > 0 then
  cached, fresh = {}, 0
  for i = 1, n do
    cached[i] = call('EXISTS', keys[1 + i]) == 1
    if not cached[i] then fresh = fresh + 1 end
  end
end
local token, out = 0, {}
if fresh > 0 then
  token = call('INCRBY', keys[1], fresh) - fresh
end
for i = 1, n do
  if cached and cached[i] then
    out[i] = 0
  else
    token = token + 1
    local t = format('%d-%s', token, owner)
    if call('SET', keys[1 + n + i], t, 'NX', 'PX', ttl) then
      out[i] = t
    else
      out[i] = -1
    end
  end
end
return out
