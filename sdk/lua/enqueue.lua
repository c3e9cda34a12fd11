-- enqueue: adds a run of tasks of one type, each handled exactly as if it
-- were alone, enforcing the policy the hosts published for the type.
-- KEYS: 1 policy, 2 stream, 3 delayed, 4 pressure; then per task
--       seen:<id1>, seen:<id2>, task:<id1>, task:<id2>. id1 is the payload
--       hash or the explicit id, id2 a random id or the explicit id again
--       (equal keys: an explicit id).
-- ARGV: 1 type, 2 the length of "<prefix>:{<type>}:seen:" (an id is the
--       rest of its seen key), 3 "1" for a delayed call, 4-7 the default
--       max_payload, max_backlog, idempotency, idempotency_ttl (used while
--       no host has published a policy); then per task: payload, trace,
--       and for a delayed call the delay in ms.
-- Reply: {pressure (0/1), then per task: word, id, limit}; word is OK,
--       DUPLICATE, TOO_LARGE (limit = max_payload) or BACKPRESSURE
--       (limit = max_backlog).
-- An id is a duplicate while its seen marker lives, and also while it
-- waits in the delayed set with its envelope task:<id> (a retry, or a
-- scheduled run): once the marker has expired, adding it again would
-- reset a retrying task's attempt to 1 and overwrite its envelope. A dead
-- id (its record is dead:<id>, which this script never touches) is added
-- anew.
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
local p = redis.call('HMGET', KEYS[1], 'max_payload', 'max_backlog',
                     'idempotency', 'idempotency_ttl')
local max_payload = tonumber(p[1]) or tonumber(ARGV[4])
local max_backlog = tonumber(p[2]) or tonumber(ARGV[5])
local idempotency = p[3] or ARGV[6]
local ttl = p[4]
if not (tonumber(ttl) and tonumber(ttl) >= 1) then ttl = ARGV[7] end
local out = {redis.call('EXISTS', KEYS[4])}
local backlog = -1
if max_backlog > 0 then
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
for i = 0, (#ARGV - 7) / nargs - 1 do
  local k, a = 5 + nkeys * i, 8 + nargs * i
  local word, id, limit = 'OK', '', 0
  local payload = ARGV[a]
  if #payload > max_payload then
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
      redis.call('XADD', KEYS[2], '*', 'id', id, 'type', task_type,
                 'payload', payload, 'attempt', '1',
                 'enqueued_at', now_text, 'trace', ARGV[a + 1])
    else
      redis.call('DEL', task)
      redis.call('HSET', task, 'id', id, 'type', task_type,
                 'payload', payload, 'attempt', '1',
                 'enqueued_at', now_text, 'trace', ARGV[a + 1])
      redis.call('ZADD', KEYS[3],
                 string.format('%.0f', now + tonumber(ARGV[a + 2])), id)
    end
    if word == 'OK' and backlog >= 0 then backlog = backlog + 1 end
  end
  out[#out + 1] = word
  out[#out + 1] = id
  out[#out + 1] = limit
end
return out
