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
--   then lock:<id>     of each task (same order),
--   then rate:<key>    of each task, only with a rate_limit: the GCRA
--                      bucket of its type ("<prefix>:{<type>}:rate") or,
--                      with a limit_key, of its key's value
--                      ("...:rate:<value>"), a hash: tat (the
--                      theoretical arrival time, ms) and "<id>" ->
--                      the turn (ms) reserved for a task that waits,
--   then slots:<key>   of each task, only with a limit_key and a
--                      concurrency_limit: the slots of its key's value
--                      ("<prefix>:{<type>}:slots:<value>"), a hash: id ->
--                      the entry id of each run that holds one.
-- ARGV:
--   1 lock_ttl_ms
--   2 owner            16 hex digits the caller drew at random for this
--                      call
--   3 id_offset        the length of "<prefix>:{<type>}:result:" (an id is
--                      the rest of its result key)
--   4 limit            the type's concurrency_limit, 0 for none
--   5 rate             the type's rate_limit count, 0 for none
--   6 rate_period_ms   its period
--   7 rate_burst       how many may start at once after an idle spell
--   8 key_slot_ttl_ms  with a limit_key and a concurrency_limit, how
--                      long a key's slots outlive its last begin (the
--                      longest a run of it can hold one); else 0
--   then entry         the stream entry id of each task.
-- Reply: one element per task, in order: -3 for every task while the type
--       is paused (nothing is taken); 0 when its result is cached; -2
--       when its entry was cancelled (cancel:<id> holds the entry id);
--       else it draws a fresh fencing token from fence and takes the lock
--       with SET NX PX: the lock's value "<token>-<owner>" (a string), or
--       -1 when another run holds the lock, or -4 when the type has a
--       concurrency_limit and no slot is free (nothing taken, no token
--       drawn), or {wait_ms} when the type has a rate_limit and the
--       task's turn is wait_ms away (nothing taken, no token drawn; its
--       turn is reserved for it). A lock this same owner holds
--       already (a begin sent again, after its reply was lost, to a
--       master that had it) is this run's: its value is the reply, its
--       TTL renewed, and the token drawn for it goes unused.
-- With a limit, slots whose end has passed (their run died without a
-- finish: its host was killed) are dropped first; each lock taken takes
-- a slot "<id> <token>" that lives lock_ttl unless renewed (one ZADD per
-- call), and finish gives it back.
-- With a rate: the fresh tasks that have a slot are checked against
-- their bucket by GCRA (one HMGET, HSET and PEXPIRE per bucket and
-- call, by Redis TIME so hosts with skewed clocks agree): emission
-- interval step = period / rate, tolerance burst * step. A task that
-- holds a reservation (a field of its id) starts, and its field goes;
-- one that conforms starts and advances tat by step; one that does not
-- is given the next turn (tat advances by step, as for a queued
-- request: so it is never denied again, and the turns go in the order
-- the tasks came) and is told how far away it is; the worker parks it
-- in the delayed set until then. A bucket lives as long as its tat is
-- ahead of now plus an idle minute, so a key's bucket goes once the key
-- falls idle.
-- With a limit_key the concurrency_limit is per value: a run holds a
-- slot of its value from its begin until its task leaves entries or is
-- indexed under another entry (a finish, by this run or, for a run whose
-- host died, by the host that took its task over), so the slots need no
-- renewal and no give-back of their own: each begin counts the live
-- holders of the values it meets (one HGETALL and one HMGET of entries
-- per value and call) and drops the rest. A task that holds one already
-- keeps it. The type's running zset is not used.
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
local rate = tonumber(argv[5])
local key_ttl = tonumber(argv[8])
local R = rate > 0 and 1 or 0 -- the rate keys, before the slots keys
local n = (#keys - 4) / (3 + R + (key_ttl > 0 and 1 or 0))
local A = 8 -- the entry of task i is argv[A + i]
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
    elseif call('GET', keys[4 + n + i]) == argv[A + i] then
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
-- With a limit_key: slots key -> {id, entry, ...} taken, in key order.
local holders, holder_keys = {}, {}
if limit > 0 and fresh > 0 and key_ttl > 0 then
  local by_key, order, starting = {}, {}, 0
  early = early or {}
  for i = 1, n do
    if not early[i] then
      local key = keys[4 + (3 + R) * n + i]
      if not by_key[key] then
        by_key[key] = {}
        order[#order + 1] = key
      end
      by_key[key][#by_key[key] + 1] = i
    end
  end
  for _, key in ipairs(order) do
    local h = call('HGETALL', key)
    local live, dead, count = {}, {}, 0
    if #h > 0 then
      local ids = {}
      for j = 1, #h, 2 do ids[#ids + 1] = h[j] end
      local v = call('HMGET', keys[2], unpack(ids))
      for j, id in ipairs(ids) do
        local entry = h[2 * j]
        if v[j] and string.sub(v[j], 1, #entry + 1) == entry .. ' ' then
          live[id], count = true, count + 1
        else
          dead[#dead + 1] = id
        end
      end
      if #dead > 0 then call('HDEL', key, unpack(dead)) end
    end
    for _, i in ipairs(by_key[key]) do
      if live[string.sub(keys[4 + i], skip)] then
        starting = starting + 1
      elseif count < limit then
        count, starting = count + 1, starting + 1
      else
        early[i] = -4
      end
    end
  end
  fresh = starting
elseif limit > 0 and fresh > 0 then
  call('ZREMRANGEBYSCORE', keys[4], '-inf', time_ms())
  slots = limit - call('ZCARD', keys[4])
  if slots < 0 then slots = 0 end
  if slots < fresh then fresh = slots end
end
-- The rate of the first `fresh` tasks not answered early: those that
-- must wait are answered early too, and fresh counts those that start.
local IDLE_MS, TAT = 60000, 'tat' -- the bucket's field of its tat
if rate > 0 and fresh > 0 then
  local step = tonumber(argv[6]) / rate
  local tau = tonumber(argv[7]) * step
  local buckets, order, seen, starting = {}, {}, 0, 0
  early = early or {}
  for i = 1, n do
    if not early[i] and seen < fresh then
      local key = keys[4 + 3 * n + i]
      seen = seen + 1
      if not buckets[key] then
        buckets[key] = {}
        order[#order + 1] = key
      end
      buckets[key][#buckets[key] + 1] = i
    end
  end
  -- The clock to the microsecond: at 100,000/s a step is 10 us, and a
  -- whole-ms now would let no more than a burst start per ms.
  local t = call('TIME')
  local clock = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
  now = now or math.floor(clock) -- time_ms()'s, from the same TIME
  for _, key in ipairs(order) do
    local tasks, fields = buckets[key], {TAT}
    for j, i in ipairs(tasks) do
      fields[j + 1] = string.sub(keys[4 + i], skip)
    end
    local v = call('HMGET', key, unpack(fields))
    local tat = tonumber(v[1]) or clock
    local held, reserved = {}, {}
    for j, i in ipairs(tasks) do
      if v[j + 1] then
        held[#held + 1] = fields[j + 1]
        starting = starting + 1
      else
        local at = math.max(tat, clock) + step
        tat = at
        if at - clock <= tau then
          starting = starting + 1
        else
          local turn = math.ceil(at - tau)
          early[i] = {math.max(math.ceil(turn - clock), 1)}
          reserved[#reserved + 1] = fields[j + 1]
          reserved[#reserved + 1] = format('%d', turn)
        end
      end
    end
    if #held > 0 then call('HDEL', key, unpack(held)) end
    call('HSET', key, TAT, format('%.3f', tat), unpack(reserved))
    call('PEXPIRE', key, math.ceil(math.max(tat - clock, 0)) + IDLE_MS)
  end
  fresh = starting
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
      if limit > 0 and key_ttl > 0 then
        local key = keys[4 + (3 + R) * n + i]
        if not holders[key] then
          holders[key] = {}
          holder_keys[#holder_keys + 1] = key
        end
        local held = holders[key]
        held[#held + 1] = string.sub(keys[4 + i], skip)
        held[#held + 1] = argv[A + i]
      elseif limit > 0 then
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
for _, key in ipairs(holder_keys) do
  call('HSET', key, unpack(holders[key]))
  call('PEXPIRE', key, key_ttl)
end
if #begun > 0 then
  local at = format('%d', time_ms())
  local fields = {}
  for _, i in ipairs(begun) do
    fields[#fields + 1] = string.sub(keys[4 + i], skip)
    fields[#fields + 1] = argv[A + i] .. ' ' .. at
  end
  call('HSET', keys[2], unpack(fields))
end
return out
