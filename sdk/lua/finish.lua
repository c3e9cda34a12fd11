-- finish: ends the runs of a batch of one queue and one consumer, each
-- task as if it were alone.
-- KEYS:
--   1 stream
--   2 delayed
--   3 dead
--   4 entries
--   5 running          the concurrency slots (see begin.lua)
--   then lock:<id>     of each task but an ack,
--   then <record>      of the same tasks, in the same order: its
--                      result:<id> (ok), task:<id> (retry), dead:<id>
--                      (dead) or cancel:<id> (cancelled),
--   then cancel:<id>   of every task,
--   then children:<id> of every task (its dependents: workflows),
--   then <outbox>      one key: the type's outbox.
-- ARGV:
--   1 group
--   2 consumer         also the envelope's worker
--   3 result_ttl_ms
--   4 dead_ttl_ms
--   5 type
--   6 mode             "" or "resend"
--   7 kinds            the tasks' kinds, one letter each: a ack, o ok,
--                      r retry or reschedule, d dead, c cancelled; R and
--                      D are r and d for a task enqueued with options
--   8 id_offset        the length of "<prefix>:{<type>}:cancel:" (an id
--                      is the rest of its cancel key)
--   9 limit            the type's concurrency_limit, 0 for none
--   then entry         the entry id of every task,
--   then token         the token of each task but an ack ("" when the run
--                      holds no lock),
--   then <per_task>    per task but an ack: o its result; r the envelope
--                      (id, payload, attempt of the next run, enqueued_at,
--                      trace, error) and delay_ms (-1: it waits for a
--                      concurrency slot; -2: for a slot of its limit_key's
--                      value); d the envelope; c nothing. R and D
--                      add the task's options, "name value" pairs
--                      space-separated (timeout_ms, max_attempts,
--                      expires_at), as one more argument: written into
--                      the envelope, so a retry keeps them.
-- Reply: {codes, errors...}: codes has one letter per task, k (done as
--       asked), w (done as asked, and its dependents' notice is in the
--       outbox: drain it), c (cancelled), s (stale) or e (failed: its
--       message is the next of errors).
-- A run still owns its task only if the entry is pending under this
-- consumer and, when it took the lock, the lock still holds its token; a
-- task it no longer owns is stale and nothing of it is written.
-- A task whose entry was cancelled (cancel:<id> holds its entry id, see
-- cancel.lua), or that the worker says was (c), writes nothing: no
-- result, no retry, no dead record; its entry is acked and deleted, its
-- lock released (code c). Redis orders a cancel and a finish: a cancel
-- that came first wins, one that came after finds the task finished.
-- A resend (the same finish sent again after the connection broke before
-- its reply came) counts a task it no longer owns as done, not stale, when
-- an earlier send of it plainly landed: its entry is gone from the stream
-- and its effect is there (ok: result:<id> exists; retry: the id is in the
-- delayed set; dead: the id is in the dead set; ack: nothing more; a
-- cancelled one: its cancel:<id> still names the entry).
-- With a limit, every run of the call that held a lock gives its slot
-- "<id> <token>" back, owned or stale (the run is over either way). A
-- retry with delay_ms -1 (begin found no free slot) waits in the delayed
-- set scored PARK_AT + now: never due, in the order it came; then as many
-- waiting tasks as this call gave slots back or parked (at most the free
-- slots) become due now, oldest first, and the next promote puts them in
-- the stream. So a waiting task costs nothing until a slot frees, and a
-- slot that freed while a task was being parked is not missed. A retry
-- with delay_ms -2 waits scored PARK_AT + 2^51 + now and wakes nothing:
-- the free slots seen here are the type's, not its value's; limit_wake.lua
-- wakes such waiters.
-- An owned task: ok stores its result (an empty one too, TTL result_ttl);
-- retry writes the envelope task:<id> and puts the id in the delayed set
-- at now + delay; dead writes the dead record dead:<id> (the same fields,
-- TTL dead_ttl; a later run of the same id never touches it), puts the id
-- in the dead set at now, and ids older than dead_ttl leave that set
-- (dead_max is kept by trim_dead); an ack writes nothing. Then its entry
-- is acked and deleted, its lock released, and its id leaves entries
-- when entries still names that entry. A retry or dead write that fails
-- (a key of the wrong type) leaves that task pending and locked, and the
-- others go on; a result SET can only fail as the call's first write (out
-- of memory), failing the call.
-- The checks and the acks take one command per call, not per task:
-- XPENDING over the consumer's oldest entries (one XPENDING per entry only
-- for those it did not reach), one MGET of the locks, one EXISTS of the
-- cancel keys, one XACK, XDEL and DEL, one HMGET and HDEL of entries. A
-- call of nothing but owned, uncancelled ok tasks (the common case) takes
-- a short path with no per-task tables.
-- Workflows (docs/protocol.md): a task whose children:<id> exists has
-- dependents (held children, a group). Its ok or dead finish appends, in
-- the same call, one outbox entry {from "<type>:<id>", state o|d, result,
-- to: the dependents, one a line} and deletes children:<id>; the caller
-- drains the entry (code w). The children keys ride in the one EXISTS of
-- the cancel keys, so a call without workflows costs no command more.
local call, keys, argv = redis.call, KEYS, ARGV
local group, consumer, kinds = argv[1], argv[2], string.lower(argv[7])
local with_options = argv[7]
local skip = tonumber(argv[8]) + 1
local resend = argv[6] == 'resend'
local n = #kinds
local limit = tonumber(argv[9])
local PARK_AT = 4503599627370496 -- 2^52 ms: the year 144,683
local m = (#keys - 6 - 2 * n) / 2
local cancels = 6 + 2 * m -- the first cancel key
local children = cancels + n -- the first children key (workflows)
local p = call('XPENDING', keys[1], group, '-', '+', n, consumer)
local pending = {}
for j = 1, #p do pending[p[j][1]] = true end
local function owns(entry)
  if pending[entry] then return true end
  return #p >= n and #call('XPENDING', keys[1], group, entry, entry, 1,
                           consumer) > 0
end
-- Removes from entries the ids of tasks[] (indices) still indexed under
-- the entry this call finished.
local function unindex(tasks)
  if #tasks == 0 then return end
  local ids = {}
  for j, i in ipairs(tasks) do
    ids[j] = string.sub(keys[cancels + i - 1], skip)
  end
  local v = call('HMGET', keys[4], unpack(ids))
  local gone = {}
  for j, i in ipairs(tasks) do
    local entry = argv[9 + i]
    if v[j] and (v[j] == entry or
                 string.sub(v[j], 1, #entry + 1) == entry .. ' ') then
      gone[#gone + 1] = ids[j]
    end
  end
  if #gone > 0 then call('HDEL', keys[4], unpack(gone)) end
end
-- The slot of task i's run, whose lock held token.
local function slot_of(i, token)
  return string.sub(keys[cancels + i - 1], skip) .. ' ' .. token
end
-- With a limit: gives back the slots gone[] and makes due now as many
-- waiting tasks as `wake` (at most the free slots).
local function give_back(gone, wake)
  if limit == 0 or (#gone == 0 and wake == 0) then return end
  local time = call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  if #gone > 0 then call('ZREM', keys[5], unpack(gone)) end
  call('ZREMRANGEBYSCORE', keys[5], '-inf', now)
  local free = limit - call('ZCARD', keys[5])
  if wake > free then wake = free end
  if wake <= 0 then return end
  local ids = call('ZRANGEBYSCORE', keys[2], PARK_AT, '+inf', 'LIMIT', 0, wake)
  if #ids == 0 then return end
  local due = {}
  for _, id in ipairs(ids) do
    due[#due + 1] = now
    due[#due + 1] = id
  end
  call('ZADD', keys[2], 'XX', unpack(due))
end
if m == n and not string.find(kinds, '[^o]') and
   call('EXISTS', unpack(keys, cancels, children + n - 1)) == 0 then
  local v = call('MGET', unpack(keys, 6, 5 + n))
  local all = true
  for i = 1, n do
    local token = argv[9 + n + i]
    if token == '' or v[i] ~= token or
       not (pending[argv[9 + i]] or owns(argv[9 + i])) then
      all = false
      break
    end
  end
  if all then
    local ttl, done = argv[3], {}
    for i = 1, n do
      call('SET', keys[5 + n + i], argv[9 + 2 * n + i], 'PX', ttl)
      done[i] = i
    end
    call('XACK', keys[1], group, unpack(argv, 10, 9 + n))
    call('XDEL', keys[1], unpack(argv, 10, 9 + n))
    call('DEL', unpack(keys, 6, 5 + n))
    unindex(done)
    if limit > 0 then
      local gone = {}
      for i = 1, n do gone[i] = slot_of(i, argv[9 + n + i]) end
      give_back(gone, n)
    end
    return {string.rep('k', n)}
  end
end
local function failed(r) return type(r) == 'table' and r.err end
-- Entries whose cancel:<id> names them.
local cancelled = {}
local flagged = call('EXISTS', unpack(keys, cancels, children + n - 1))
local cancels_found = 0
if flagged > 0 then
  local v = call('MGET', unpack(keys, cancels, cancels + n - 1))
  for i = 1, n do
    cancelled[i] = v[i] == argv[9 + i]
    if v[i] then cancels_found = cancels_found + 1 end
  end
end
-- Workflows: task i's final end goes to its dependents through the outbox.
local has_children = flagged > cancels_found
local function tell_dependents(i, kind, result)
  if not has_children or (kind ~= 'o' and kind ~= 'd') then return false end
  local to = call('SMEMBERS', keys[children + i - 1])
  if #to == 0 then return false end
  local id = string.sub(keys[cancels + i - 1], skip)
  call('XADD', keys[#keys], '*', 'from', argv[5] .. ':' .. id, 'state', kind,
       'result', result or '', 'to', table.concat(to, '\n'))
  call('DEL', keys[children + i - 1])
  return true
end
-- A resent task's earlier send landed: entry gone, effect visible.
local function landed(i, kind, at, key)
  if #call('XRANGE', keys[1], argv[9 + i], argv[9 + i]) > 0 then
    return false
  end
  if cancelled[i] or kind == 'a' then return true end
  if kind == 'o' then return call('EXISTS', key) == 1 end
  if kind == 'r' then return call('ZSCORE', keys[2], argv[at]) ~= false end
  if kind == 'c' then return false end
  return call('ZSCORE', keys[3], argv[at]) ~= false
end
local owned, locks, holders, slots = {}, {}, {}, {}
local t = 0
for i = 1, n do
  owned[i] = owns(argv[9 + i])
  if string.sub(kinds, i, i) ~= 'a' then
    t = t + 1
    if owned[i] and argv[9 + n + t] ~= '' then
      locks[#locks + 1] = keys[5 + t]
      holders[#locks], slots[#locks] = i, t
    end
  end
end
if #locks > 0 then
  local v = call('MGET', unpack(locks))
  for j = 1, #locks do
    if v[j] ~= argv[9 + n + slots[j]] then owned[holders[j]] = false end
  end
end
local now, dead_ttl, died = nil, tonumber(argv[4]), false
local codes, out, acks, releases, done = {}, {''}, {}, {}, {}
local gone, parked = {}, 0
local a = 10 + n + m
t = 0
for i = 1, n do
  local kind, r, at, lock, key, token = string.sub(kinds, i, i)
  local options
  if kind ~= 'a' then
    t = t + 1
    at, lock, key, token = a, keys[5 + t], keys[5 + m + t], argv[9 + n + t]
    if kind == 'o' then a = a + 1
    elseif kind == 'r' then a = a + 7
    elseif kind == 'd' then a = a + 6 end
    if string.find(string.sub(with_options, i, i), '[RD]') then
      options = argv[a]
      a = a + 1
    end
  end
  if limit > 0 and kind ~= 'a' and token ~= '' then
    gone[#gone + 1] = slot_of(i, token)
  end
  if not owned[i] then
    if resend and landed(i, kind, at, key) then
      codes[i] = (cancelled[i] or kind == 'c') and 'c' or 'k'
    else
      codes[i] = 's'
    end
  else
    local cancel = cancelled[i] or kind == 'c'
    if cancel or kind == 'a' then
      -- nothing written
    elseif kind == 'o' then
      call('SET', key, argv[at], 'PX', argv[3])
    else
      if not now then
        local time = call('TIME')
        now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
      end
      call('DEL', key)
      r = redis.pcall('HSET', key, 'id', argv[at], 'type', argv[5],
                      'payload', argv[at + 1], 'attempt', argv[at + 2],
                      'enqueued_at', argv[at + 3], 'trace', argv[at + 4],
                      'error', argv[at + 5], 'worker', consumer,
                      'failed_at', now)
      if options and not failed(r) then
        local fields = {}
        for word in string.gmatch(options, '%S+') do
          fields[#fields + 1] = word
        end
        r = redis.pcall('HSET', key, unpack(fields))
      end
      if kind == 'r' and not failed(r) and tonumber(argv[at + 6]) < 0 then
        -- -2: it waits for a slot of its limit_key's value (begin.lua),
        -- which the free slots seen here are not: its park wakes none,
        -- and it waits 2^51 further on, where limit_wake tells it apart.
        local keyed = argv[at + 6] == '-2'
        r = redis.pcall('ZADD', keys[2],
                        (keyed and PARK_AT + 2251799813685248 or PARK_AT) + now,
                        argv[at])
        if not keyed then parked = parked + 1 end
      elseif kind == 'r' and not failed(r) then
        r = redis.pcall('ZADD', keys[2], now + tonumber(argv[at + 6]),
                        argv[at])
      elseif not failed(r) then
        call('PEXPIRE', key, dead_ttl)
        r = redis.pcall('ZADD', keys[3], now, argv[at])
        died = died or not failed(r)
      end
    end
    if failed(r) then
      codes[i], out[#out + 1] = 'e', r.err
    else
      codes[i], acks[#acks + 1] = cancel and 'c' or 'k', argv[9 + i]
      -- A cancelled run counts as dead for its dependents; its notice
      -- waits for the sweep (its code stays c).
      if cancel then
        tell_dependents(i, 'd', nil)
      elseif tell_dependents(i, kind, kind == 'o' and argv[at] or nil) then
        codes[i] = 'w'
      end
      done[#done + 1] = i
      if kind ~= 'a' and token ~= '' then
        releases[#releases + 1] = lock
      end
    end
  end
end
if died then
  call('ZREMRANGEBYSCORE', keys[3], '-inf', '(' .. (now - dead_ttl))
end
if #acks > 0 then
  call('XACK', keys[1], group, unpack(acks))
  call('XDEL', keys[1], unpack(acks))
end
if #releases > 0 then call('DEL', unpack(releases)) end
unindex(done)
give_back(gone, #gone + parked)
out[1] = table.concat(codes)
return out
