-- finish: ends the runs of a batch of one queue and one consumer, each
-- task as if it were alone.
-- KEYS: 1 stream, 2 delayed, 3 dead, then for each task but an ack its
--       lock:<id>, then (same order) its result:<id> (ok), task:<id>
--       (retry) or dead:<id> (dead).
-- ARGV: 1 group, 2 consumer (also the envelope's worker), 3 result_ttl_ms,
--       4 dead_ttl_ms, 5 type, 6 mode ("" or "resend"), 7 the tasks' kinds
--       (one letter each: a ack, o ok, r retry or reschedule, d dead),
--       then the entry id of every
--       task, then the token of each task but an ack ("" when the run
--       holds no lock), then per task but an ack: o its result; r the
--       envelope (id, payload, attempt of the next run, enqueued_at,
--       trace, error) and delay_ms; d the envelope.
-- Reply: {codes, errors...}: codes has one letter per task, k (done as
--       asked), s (stale) or e (failed: its message is the next of
--       errors).
-- A run still owns its task only if the entry is pending under this
-- consumer and, when it took the lock, the lock still holds its token; a
-- task it no longer owns is stale and nothing of it is written.
-- A resend (the same finish sent again after the connection broke before
-- its reply came) counts a task it no longer owns as done, not stale, when
-- an earlier send of it plainly landed: its entry is gone from the stream
-- and its effect is there (ok: result:<id> exists; retry: the id is in the
-- delayed set; dead: the id is in the dead set; ack: nothing more).
-- An owned task: ok stores its result (an empty one too, TTL result_ttl);
-- retry writes the envelope task:<id> and puts the id in the delayed set
-- at now + delay; dead writes the dead record dead:<id> (the same fields,
-- TTL dead_ttl; a later run of the same id never touches it), puts the id
-- in the dead set at now, and ids older than dead_ttl leave that set
-- (dead_max is kept by trim_dead); an ack writes nothing. Then its entry
-- is acked and deleted and its lock released. A retry or dead write that
-- fails (a key of the wrong type) leaves that task pending and locked, and
-- the others go on; a result SET can only fail as the call's first write
-- (out of memory), failing the call.
-- The checks and the acks take one command per call, not per task:
-- XPENDING over the consumer's oldest entries (one XPENDING per entry only
-- for those it did not reach), one MGET of the locks, one XACK, XDEL and
-- DEL. A call of nothing but owned ok tasks (the common case) takes a
-- short path with no per-task tables.
local call, keys, argv = redis.call, KEYS, ARGV
local group, consumer, kinds = argv[1], argv[2], argv[7]
local resend = argv[6] == 'resend'
local n, m = #kinds, (#keys - 3) / 2
local p = call('XPENDING', keys[1], group, '-', '+', n, consumer)
local pending = {}
for j = 1, #p do pending[p[j][1]] = true end
local function owns(entry)
  if pending[entry] then return true end
  return #p >= n and #call('XPENDING', keys[1], group, entry, entry, 1,
                           consumer) > 0
end
if m == n and not string.find(kinds, '[^o]') then
  local v = call('MGET', unpack(keys, 4, 3 + n))
  local all = true
  for i = 1, n do
    local token = argv[7 + n + i]
    if token == '' or v[i] ~= token or
       not (pending[argv[7 + i]] or owns(argv[7 + i])) then
      all = false
      break
    end
  end
  if all then
    local ttl = argv[3]
    for i = 1, n do
      call('SET', keys[3 + n + i], argv[7 + 2 * n + i], 'PX', ttl)
    end
    call('XACK', keys[1], group, unpack(argv, 8, 7 + n))
    call('XDEL', keys[1], unpack(argv, 8, 7 + n))
    call('DEL', unpack(keys, 4, 3 + n))
    return {string.rep('k', n)}
  end
end
local function failed(r) return type(r) == 'table' and r.err end
-- A resent task's earlier send landed: entry gone, effect visible.
local function landed(entry, kind, at, key)
  if #call('XRANGE', keys[1], entry, entry) > 0 then return false end
  if kind == 'a' then return true end
  if kind == 'o' then return call('EXISTS', key) == 1 end
  if kind == 'r' then return call('ZSCORE', keys[2], argv[at]) ~= false end
  return call('ZSCORE', keys[3], argv[at]) ~= false
end
local owned, locks, holders, slots = {}, {}, {}, {}
local t = 0
for i = 1, n do
  owned[i] = owns(ARGV[7 + i])
  if string.sub(kinds, i, i) ~= 'a' then
    t = t + 1
    if owned[i] and ARGV[7 + n + t] ~= '' then
      locks[#locks + 1] = KEYS[3 + t]
      holders[#locks], slots[#locks] = i, t
    end
  end
end
if #locks > 0 then
  local v = redis.call('MGET', unpack(locks))
  for j = 1, #locks do
    if v[j] ~= ARGV[7 + n + slots[j]] then owned[holders[j]] = false end
  end
end
local now, dead_ttl, died = nil, tonumber(ARGV[4]), false
local codes, out, acks, releases = {}, {''}, {}, {}
local a = 8 + n + m
t = 0
for i = 1, n do
  local kind, r, at, lock, key, token = string.sub(kinds, i, i)
  if kind ~= 'a' then
    t = t + 1
    at, lock, key, token = a, KEYS[3 + t], KEYS[3 + m + t], ARGV[7 + n + t]
    if kind == 'o' then a = a + 1
    elseif kind == 'r' then a = a + 7
    else a = a + 6 end
  end
  if not owned[i] then
    if resend and landed(ARGV[7 + i], kind, at, key) then
      codes[i] = 'k'
    else
      codes[i] = 's'
    end
  else
    if kind == 'o' then
      redis.call('SET', key, ARGV[at], 'PX', ARGV[3])
    elseif kind ~= 'a' then
      if not now then
        local time = redis.call('TIME')
        now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
      end
      redis.call('DEL', key)
      r = redis.pcall('HSET', key, 'id', ARGV[at], 'type', ARGV[5],
                      'payload', ARGV[at + 1], 'attempt', ARGV[at + 2],
                      'enqueued_at', ARGV[at + 3], 'trace', ARGV[at + 4],
                      'error', ARGV[at + 5], 'worker', consumer,
                      'failed_at', now)
      if kind == 'r' and not failed(r) then
        r = redis.pcall('ZADD', KEYS[2], now + tonumber(ARGV[at + 6]),
                        ARGV[at])
      elseif not failed(r) then
        redis.call('PEXPIRE', key, dead_ttl)
        r = redis.pcall('ZADD', KEYS[3], now, ARGV[at])
        died = died or not failed(r)
      end
    end
    if failed(r) then
      codes[i], out[#out + 1] = 'e', r.err
    else
      codes[i], acks[#acks + 1] = 'k', ARGV[7 + i]
      if kind ~= 'a' and token ~= '' then
        releases[#releases + 1] = lock
      end
    end
  end
end
if died then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - dead_ttl))
end
if #acks > 0 then
  redis.call('XACK', KEYS[1], group, unpack(acks))
  redis.call('XDEL', KEYS[1], unpack(acks))
end
if #releases > 0 then redis.call('DEL', unpack(releases)) end
out[1] = table.concat(codes)
return out
