-- cancel: cancels one task (wharf cancel, and every client's cancel).
-- KEYS:
--   1 policy
--   2 entries
--   3 stream
--   4 delayed
--   5 task:<id>
--   6 seen:<id>
--   7 cancel:<id>
--   8 dead
--   9 held            workflows: tasks held for their parents
--   10 wait:<id>       a held task's envelope
--   11 parents:<id>    its parents' notices
--   12 children:<id>   its dependents (workflows)
--   13 outbox          the type's outbox
-- ARGV:
--   1 id
--   2 group
--   3 protocols        the protocol versions the client speaks
--                      (comma-separated)
-- Reply: {word, detail}:
--   REMOVED queued|delayed|held  it was waiting (held: for its
--                           parents): it is gone and never runs
--   CANCELLING <consumer>   it is claimed by that worker: the run is
--                           asked to end (its host sees cancel:<id>)
--                           and its finish writes nothing
--   FINISHED done|dead      too late: it has ended
--   CANCELLED ""            it was cancelled already
--   UNKNOWN ""              no such task
--   PROTOCOL <version>      the hosts speak a protocol the client does
--                           not: nothing done
-- cancel:<id> holds the stream entry id of the cancelled entry ("delayed"
-- for a delayed task) for a day (CANCEL_TTL_MS): begin skips that entry,
-- finish writes nothing for it, the hosts' supervisors ask its running
-- plugin to end, and status reports "cancelled" once it is gone. Being
-- about one entry, it never touches a later enqueue of the same id; and
-- the id's seen marker is deleted, so the id may be enqueued again at
-- once.
-- A task removed before it ran (queued, delayed, held) counts as dead for
-- its dependents: their notice goes to the outbox, as a dead finish's
-- would, and the hosts' sweep delivers it; a running one's finish does
-- the same (finish.lua).
-- result:<id> is read without being named in KEYS: Redis takes every key
-- an EVALSHA names as written too, and a producer's ACL may read results
-- only (etc/wharf.acl). It is task:<id>'s name with result in place of
-- task, so in the same slot.
local CANCEL_TTL_MS = 86400000
local id, group = ARGV[1], ARGV[2]
local result_key = string.sub(KEYS[5], 1, #KEYS[5] - #'task:' - #id) ..
  'result:' .. id
local function tell_dependents()
  local to = redis.call('SMEMBERS', KEYS[12])
  if #to == 0 then return end
  redis.call('XADD', KEYS[13], '*', 'from',
             string.match(KEYS[1], '{(.-)}') .. ':' .. id, 'state', 'd',
             'result', '', 'to', table.concat(to, '\n'))
  redis.call('DEL', KEYS[12])
end
local protocol = redis.call('HGET', KEYS[1], 'protocol')
if protocol and not string.find(',' .. ARGV[3] .. ',', ',' .. protocol .. ',',
                                1, true) then
  return {'PROTOCOL', protocol}
end
local index = redis.call('HGET', KEYS[2], id)
local entry = index and string.match(index, '^(%S+)')
if entry and #redis.call('XRANGE', KEYS[3], entry, entry) > 0 then
  redis.call('DEL', KEYS[6])
  redis.call('SET', KEYS[7], entry, 'PX', CANCEL_TTL_MS)
  local p = redis.pcall('XPENDING', KEYS[3], group, entry, entry, 1)
  if type(p) == 'table' and not p.err and #p > 0 then
    return {'CANCELLING', p[1][2]}
  end
  redis.call('XDEL', KEYS[3], entry)
  redis.call('HDEL', KEYS[2], id)
  tell_dependents()
  return {'REMOVED', 'queued'}
end
if redis.call('ZREM', KEYS[4], id) == 1 then
  redis.call('DEL', KEYS[5], KEYS[6])
  redis.call('SET', KEYS[7], 'delayed', 'PX', CANCEL_TTL_MS)
  tell_dependents()
  return {'REMOVED', 'delayed'}
end
if redis.call('ZREM', KEYS[9], id) == 1 then
  redis.call('DEL', KEYS[10], KEYS[11], KEYS[6])
  redis.call('SET', KEYS[7], 'held', 'PX', CANCEL_TTL_MS)
  tell_dependents()
  return {'REMOVED', 'held'}
end
if redis.call('EXISTS', result_key) == 1 then return {'FINISHED', 'done'} end
if redis.call('ZSCORE', KEYS[8], id) then return {'FINISHED', 'dead'} end
if redis.call('EXISTS', KEYS[7]) == 1 then return {'CANCELLED', ''} end
return {'UNKNOWN', ''}
