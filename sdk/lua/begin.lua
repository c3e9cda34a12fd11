-- begin: takes the locks of a batch of one queue, after the result cache
-- and cancel checks.
-- KEYS:
--   1 fence
--   2 entries
--   3 paused           set while the type is paused (pause.lua)
--   4 running          the concurrency slots of a type with a limit: a
--                      zset of "<id> <token>", scored by when the slot
--                      ends unless its run renews it (renew.lua)
--   then result:<id>   of each task,
--   then cancel:<id>   of each task,
--   then lock:<id>     of each task (same order).
-- ARGV:
--   1 lock_ttl_ms
--   2 owner            16 hex digits the caller drew at random for this
--                      call
--   3 id_offset        the length of "<prefix>:{<type>}:result:" (an id is
--                      the rest of its result key)
--   4 limit            the type's concurrency_limit, 0 for none
--   then entry         the stream entry id of each task.
-- Reply: one element per task, in order: -3 for every task while the type
--       is paused (nothing is taken); 0 when its result is cached; -2
--       when its entry was cancelled (cancel:<id> holds the entry id);
--       else it draws a fresh fencing token from fence and takes the lock
--       with SET NX PX: the lock's value "<token>-<owner>" (a string), or
--       -1 when another run holds the lock, or -4 when the type has a
--       concurrency_limit and no slot is free (nothing taken, no token
--       drawn). A lock this same owner holds
--       already (a begin sent again, after its reply was lost, to a
--       master that had it) is this run's: its value is the reply, its
--       TTL renewed, and the token drawn for it goes unused.
-- With a limit, slots whose end has passed (their run died without a
-- finish: its host was killed) are dropped first; each lock taken takes
-- a slot "<id> <token>" that lives lock_ttl unless renewed (one ZADD per
-- call), and finish gives it back.
-- A task whose lock it takes is marked begun in entries: id -> "<entry
-- id> <now ms>" (one HSET per call), which status reads as "running
-- since".
-- The owner part lets the caller release the locks of a call whose reply
-- it never read (the connection broke): it knows the owner, not the
-- tokens (see release.lua).
-- Per call, not per task: one EXISTS over the paused key and every result
-- and cancel key answers the common case (not paused, none cached, none
-- cancelled), and one INCRBY
-- draws the tokens: the same tokens, in the same order, as one INCR per
-- task. A token is formatted as an integer (%d, cheap) rather than left to
-- Redis's %.17g. Only the first write can fail (out of memory, before
-- anything was written): then the call fails as a whole.
local call, format, keys, argv = redis.call, string.format, KEYS, ARGV
local ttl, owner, skip = argv[1], argv[2], tonumber(argv[3]) + 1
local limit = tonumber(argv[4])
local n = (#keys - 4) / 3
local early, fresh = nil, n
if call('EXISTS', keys[3], unpack(keys, 5, 4 + 2 * n)) > 0 then
  if call('EXISTS', keys[3]) == 1 then
    local out = {}
    for i = 1, n do out[i] = -3 end
    return out
  end
  early, fresh = {}, 0
  for i = 1, n do
    if call('EXISTS', keys[4 + i]) == 1 then
      early[i] = 0
    elseif call('GET', keys[4 + n + i]) == argv[4 + i] then
      early[i] = -2
    else
      fresh = fresh + 1
    end
  end
end
local now
local function time_ms()
  if not now then
    local time = call('TIME')
    now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  return now
end
local slots = fresh
if limit > 0 and fresh > 0 then
  call('ZREMRANGEBYSCORE', keys[4], '-inf', time_ms())
  slots = limit - call('ZCARD', keys[4])
  if slots < 0 then slots = 0 end
  if slots < fresh then fresh = slots end
end
local token, out, begun, taken = 0, {}, {}, {}
if fresh > 0 then
  token = call('INCRBY', keys[1], fresh) - fresh
end
local drawn = 0
for i = 1, n do
  if early and early[i] then
    out[i] = early[i]
  elseif drawn == fresh then
    out[i] = -4
  else
    token, drawn = token + 1, drawn + 1
    local t = format('%d-%s', token, owner)
    local lock = keys[4 + 2 * n + i]
    if call('SET', lock, t, 'NX', 'PX', ttl) then
      out[i] = t
      begun[#begun + 1] = i
      if limit > 0 then
        taken[#taken + 1] = time_ms() + tonumber(ttl)
        taken[#taken + 1] = string.sub(keys[4 + i], skip) .. ' ' .. t
      end
    else
      local held = call('GET', lock)
      if held and #held > #owner + 1 and
         string.sub(held, -#owner - 1) == '-' .. owner then
        call('PEXPIRE', lock, ttl)
        out[i] = held
      else
        out[i] = -1
      end
    end
  end
end
if #taken > 0 then call('ZADD', keys[4], unpack(taken)) end
if #begun > 0 then
  local at = format('%d', time_ms())
  local fields = {}
  for _, i in ipairs(begun) do
    fields[#fields + 1] = string.sub(keys[4 + i], skip)
    fields[#fields + 1] = argv[4 + i] .. ' ' .. at
  end
  call('HSET', keys[2], unpack(fields))
end
return out
