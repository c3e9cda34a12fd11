-- enqueue: adds a run of tasks of one type, each handled exactly as if it
-- were alone, enforcing the policy the hosts published for the type.
-- KEYS:
--   1 policy
--   2 stream
--   3 delayed
--   4 pressure
--   5 entries
--   each seen:<id1>    then per task these four: id1 is the payload hash
--   each seen:<id2>    or the explicit id, id2 a random id or the
--   each task:<id1>    explicit id again (equal keys: an explicit id)
--   each task:<id2>
-- ARGV:
--   1 type
--   2 id_offset        the length of "<prefix>:{<type>}:seen:" (an id is
--                      the rest of its seen key)
--   3 delayed          "1" for a delayed call
--   4 max_payload      4-7 the defaults, used while no host has published
--   5 max_backlog      a policy
--   6 idempotency
--   7 idempotency_ttl
--   8 protocols        the protocol versions the client speaks
--                      (comma-separated, e.g. "1")
--   9 strict           "1" to refuse the tasks when no host ever published
--                      a policy for the type
--   10 options         "" or the tasks' options, "name value" pairs
--                      space-separated: timeout_ms (1 to 30 days),
--                      max_attempts (1 to 1000), expires_at (wall clock
--                      ms); each becomes a field of every task of the
--                      call (docs/protocol.md). Producers check them; a
--                      malformed list is the error reply "BADOPTIONS
--                      ...: nothing was enqueued".
--   then <per_task>    payload, trace, and for a delayed call the delay in
--                      ms.
-- Reply: {flags, then per task: word, id, limit}; flags is 1 while the
--       type's pressure is on, plus 2 when no host ever published a policy
--       for the type (nobody serves it); word is one of:
--   OK
--   DUPLICATE
--   TOO_LARGE          limit = max_payload
--   BACKPRESSURE       limit = max_backlog
--   UNSERVED           strict, and no policy: nothing added
--   PROTOCOL           the hosts publish a protocol the client does not
--                      speak, limit = that version: nothing added
-- An id is a duplicate while its seen marker lives, and also while it
-- waits in the delayed set with its envelope task:<id> (a retry, or a
-- scheduled run): once the marker has expired, adding it again would
-- reset a retrying task's attempt to 1 and overwrite its envelope. A dead
-- id (its record is dead:<id>, which this script never touches) is added
-- anew.
-- Every task added to the stream is indexed in entries (id -> stream
-- entry id, one HSET per call), so status and cancel find it without a
-- scan.
-- The backlog is ready + delayed, as the hosts count it (running tasks are
-- not waiting); it counts the tasks added before, so a run is judged as
-- the same tasks one by one. Times come from Redis TIME, so producers with
-- skewed clocks agree. 'wharf' is the consumer group every stream has.
-- The type goes into <prefix>:types by a command of its own (that set is
-- in no type's Redis Cluster slot, and every key of a script call must be
-- in one).
-- Every argument costs Redis work on each call, so ids ride in their keys
-- and a ready task sends no delay; numbers handed to
-- redis.call are strings, as Lua would format them with printf.
-- A refused call writes nothing, whatever Redis answers: a script is not
-- rolled back when a command in it fails, so each key of the type that
-- the call writes or reads after its first write (delayed; stream and
-- entries for a ready call) is checked for its kind before anything is
-- written, and one of the wrong kind is the error reply "WRONGTYPE <key>
-- holds a <kind>, not a <kind>: nothing was enqueued". (A seen marker of
-- the wrong kind answers DUPLICATE, as SET NX writes nothing then; a
-- task:<id> is deleted before it is written.)
local function wrong_kind(key, want)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' or kind == want then return nil end
  return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. kind ..
                           ', not a ' .. want .. ': nothing was enqueued')
end
local bad = wrong_kind(KEYS[3], 'zset')
if not bad and ARGV[3] ~= '1' then
  bad = wrong_kind(KEYS[2], 'stream') or wrong_kind(KEYS[5], 'hash')
end
if bad then return bad end
-- The options, checked before anything is written; a task without any
-- carries no field more.
local options = {}
for word in string.gmatch(ARGV[10], '%S+') do options[#options + 1] = word end
for j = 1, #options, 2 do
  local name, value = options[j], options[j + 1]
  if not (name == 'timeout_ms' or name == 'max_attempts' or
          name == 'expires_at') or not value or
     not string.find(value, '^[1-9][0-9]*$') or #value > 15 then
    return redis.error_reply('BADOPTIONS "' .. ARGV[10] .. '" is not ' ..
                             'timeout_ms, max_attempts or expires_at ' ..
                             'with a number each: nothing was enqueued')
  end
end
local p = redis.call('HMGET', KEYS[1], 'max_payload', 'max_backlog',
                     'idempotency', 'idempotency_ttl', 'protocol')
local served = p[1] or p[2] or p[3] or p[4]
local refuse, refused_limit = nil, 0
if p[5] and not string.find(',' .. ARGV[8] .. ',', ',' .. p[5] .. ',', 1,
                            true) then
  refuse, refused_limit = 'PROTOCOL', tonumber(p[5]) or 0
elseif not served and ARGV[9] == '1' then
  refuse = 'UNSERVED'
end
local max_payload = tonumber(p[1]) or tonumber(ARGV[4])
local max_backlog = tonumber(p[2]) or tonumber(ARGV[5])
local idempotency = p[3] or ARGV[6]
local ttl = p[4]
if not (tonumber(ttl) and tonumber(ttl) >= 1) then ttl = ARGV[7] end
local flags = redis.call('EXISTS', KEYS[4])
if not served then flags = flags + 2 end
local out = {flags}
local backlog = -1
if max_backlog > 0 and not refuse then
  backlog = redis.call('XLEN', KEYS[2]) + redis.call('ZCARD', KEYS[3])
  local pending = redis.pcall('XPENDING', KEYS[2], 'wharf')
  if type(pending) == 'table' and pending.err == nil then
    backlog = backlog - pending[1]
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_text = string.format('%.0f', now)
local task_type, skip = ARGV[1], tonumber(ARGV[2]) + 1
local delayed = ARGV[3] == '1'
local nkeys, nargs = 4, 2
if delayed then nargs = 3 end
local index = {}
for i = 0, (#ARGV - 10) / nargs - 1 do
  local k, a = 6 + nkeys * i, 11 + nargs * i
  local word, id, limit = 'OK', '', 0
  local payload = ARGV[a]
  if refuse then
    word, limit = refuse, refused_limit
  elseif #payload > max_payload then
    word, limit = 'TOO_LARGE', max_payload
  elseif backlog >= max_backlog then
    word, limit = 'BACKPRESSURE', max_backlog
  else
    local c = 0
    if idempotency == 'none' and KEYS[k] ~= KEYS[k + 1] then c = 1 end
    local seen = KEYS[k + c]
    id = string.sub(seen, skip)
    local task = KEYS[k + 2 + c]
    if not redis.call('SET', seen, '1', 'NX', 'PX', ttl) then
      word = 'DUPLICATE'
    elseif redis.call('ZSCORE', KEYS[3], id) and
           redis.call('EXISTS', task) == 1 then
      word = 'DUPLICATE'
    elseif not delayed then
      index[#index + 1] = id
      index[#index + 1] = redis.call('XADD', KEYS[2], '*', 'id', id,
                                     'type', task_type, 'payload', payload,
                                     'attempt', '1', 'enqueued_at', now_text,
                                     'trace', ARGV[a + 1], unpack(options))
    else
      redis.call('DEL', task)
      redis.call('HSET', task, 'id', id, 'type', task_type,
                 'payload', payload, 'attempt', '1',
                 'enqueued_at', now_text, 'trace', ARGV[a + 1],
                 unpack(options))
      redis.call('ZADD', KEYS[3],
                 string.format('%.0f', now + tonumber(ARGV[a + 2])), id)
    end
    if word == 'OK' and backlog >= 0 then backlog = backlog + 1 end
  end
  out[#out + 1] = word
  out[#out + 1] = id
  out[#out + 1] = limit
end
if #index > 0 then redis.call('HSET', KEYS[5], unpack(index)) end
return out
