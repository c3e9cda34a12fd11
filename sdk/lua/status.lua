-- status: where one task is now (wharf status, and every client's status
-- and result calls).
-- KEYS:
--   1 policy
--   2 entries
--   3 stream
--   4 delayed
--   5 task:<id>
--   6 dead
--   7 dead:<id>
--   8 cancel:<id>
--   9 held            workflows: ids held for their parents
--   10 wait:<id>       a held task's envelope (wf_enqueue.lua)
--   11 parents:<id>    its parents' notices so far
-- ARGV:
--   1 id
--   2 group
--   3 protocols        the protocol versions the client speaks
--                      (comma-separated)
--   4 with_result      "result" to have a finished task's result bytes in
--                      the reply
-- Reply: {state, name, value, name, value, ...}: the state, then fields
--       (all strings; "now" is Redis TIME in ms, every time is ms since
--       the epoch):
--   queued    entry, attempt, enqueued_at
--   running   entry, attempt, enqueued_at, worker (the consumer that
--             holds it), since (when its run began, "" if it has not
--             begun), cancel_requested ("1" or "0")
--   delayed   due_at, attempt (of the next run), enqueued_at, error
--             (the last one, "" for a scheduled task); due_at is "0"
--             while it waits for a slot of its type's concurrency_limit
--             (it has no time: it starts when a slot frees)
--   held      enqueued_at, parents (all, "<type>:<id>,..."), waits_for
--             (those not finished yet), on_parent_dead
--   done      result_bytes, expires_in_ms, and with "result" result
--   dead      error, attempts, died_at
--   cancelled expires_in_ms (how long this is remembered)
--   unknown   (nothing: never enqueued, or forgotten)
--   PROTOCOL  protocol: the hosts speak a protocol the client does not
-- queued, running, delayed and dead add the task's own options when it
-- was enqueued with them: timeout_ms, max_attempts, expires_at (each only
-- when set).
-- The first that holds wins, in this order: done (a result is cached: an
-- entry of the id still in the stream is acked as cached, not run), an
-- entry in the stream (running when it is pending in the group, else
-- queued), delayed, dead, cancelled, unknown. So a dead or cancelled id
-- enqueued again reports its new run, and a dead id that was enqueued
-- again and then finished reports done.
-- result:<id> is read without being named in KEYS: Redis takes every key
-- an EVALSHA names as written too, and a producer's ACL may read results
-- only (etc/wharf.acl). It is task:<id>'s name with result in place of
-- task, so in the same slot.
local id, group = ARGV[1], ARGV[2]
local result_key = string.sub(KEYS[5], 1, #KEYS[5] - #'task:' - #id) ..
  'result:' .. id
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 +
                                math.floor(tonumber(t[2]) / 1000))
local protocol = redis.call('HGET', KEYS[1], 'protocol')
if protocol and not string.find(',' .. ARGV[3] .. ',', ',' .. protocol .. ',',
                                1, true) then
  return {'PROTOCOL', 'protocol', protocol}
end
-- The fields of a stream entry or a hash reply, as a table.
local function fields(h)
  local v = {}
  for i = 1, #h - 1, 2 do v[h[i]] = h[i + 1] end
  return v
end
-- Appends to out the per-task options of f (fields) it has.
local function with_options(out, f)
  for name in string.gmatch('timeout_ms max_attempts expires_at', '%S+') do
    if f[name] then
      out[#out + 1] = name
      out[#out + 1] = f[name]
    end
  end
  return out
end
if redis.call('EXISTS', result_key) == 1 then
  local out = {'done', 'now', now,
               'result_bytes', tostring(redis.call('STRLEN', result_key)),
               'expires_in_ms', tostring(redis.call('PTTL', result_key))}
  if ARGV[4] == 'result' then
    out[#out + 1] = 'result'
    out[#out + 1] = redis.call('GET', result_key)
  end
  return out
end
local index = redis.call('HGET', KEYS[2], id)
if index then
  local entry, since = string.match(index, '^(%S+) ?(%d*)$')
  local x = entry and redis.call('XRANGE', KEYS[3], entry, entry) or {}
  if #x > 0 then
    local f = fields(x[1][2])
    local out = {'queued', 'now', now, 'entry', entry,
                 'attempt', f.attempt or '', 'enqueued_at', f.enqueued_at or ''}
    local p = redis.pcall('XPENDING', KEYS[3], group, entry, entry, 1)
    if type(p) == 'table' and not p.err and #p > 0 then
      out[1] = 'running'
      out[#out + 1] = 'worker'
      out[#out + 1] = p[1][2]
      out[#out + 1] = 'since'
      out[#out + 1] = since or ''
      out[#out + 1] = 'cancel_requested'
      out[#out + 1] = redis.call('GET', KEYS[8]) == entry and '1' or '0'
    end
    return with_options(out, f)
  end
end
if redis.call('ZSCORE', KEYS[9], id) then
  local f = fields(redis.call('HGETALL', KEYS[10]))
  local waits = {}
  for parent in string.gmatch(f.parents or '', '[^,]+') do
    if redis.call('HEXISTS', KEYS[11], parent) == 0 then
      waits[#waits + 1] = parent
    end
  end
  return {'held', 'now', now, 'enqueued_at', f.enqueued_at or '',
          'parents', f.parents or '', 'waits_for', table.concat(waits, ','),
          'on_parent_dead', f.on_parent_dead or 'dead'}
end
local due = redis.call('ZSCORE', KEYS[4], id)
if due and tonumber(due) >= 4503599627370496 then
  due = '0' -- waiting for a concurrency slot (finish.lua's PARK_AT)
end
if due then
  local f = fields(redis.call('HGETALL', KEYS[5]))
  return with_options({'delayed', 'now', now, 'due_at', due,
                       'attempt', f.attempt or '',
                       'enqueued_at', f.enqueued_at or '',
                       'error', f.error or ''}, f)
end
local died = redis.call('ZSCORE', KEYS[6], id)
if died then
  local f = fields(redis.call('HGETALL', KEYS[7]))
  if not f.error then f = fields(redis.call('HGETALL', KEYS[5])) end
  return with_options({'dead', 'now', now, 'error', f.error or '',
                       'attempts', f.attempt or '', 'died_at', died}, f)
end
local ttl = redis.call('PTTL', KEYS[8])
if ttl > 0 then
  return {'cancelled', 'now', now, 'expires_in_ms', tostring(ttl)}
end
return {'unknown', 'now', now}
