-- wf_notify: tells a held child, in its own slot, that one of its parents
-- has finished; releases it once every parent has.
-- KEYS:
--   1 wait:<id>        the child's envelope (wf_enqueue.lua)
--   2 parents:<id>     parent -> "o" .. its result, or "d"
--   3 held
--   4 stream
--   5 entries
--   6 dead
--   7 dead:<id>
--   8 children:<id>    the child's own dependents
--   9 outbox           the child type's outbox
--   10 parent_results:<id>  at release, parents:<id> renamed: what the
--                      child's run reads (wharf_parent_result)
-- ARGV:
--   1 id               the child's id
--   2 sender           "<type>:<id>" of the parent ("" with check)
--   3 state            "o" (ok), "d" (dead) or "check" (count only)
--   4 dead_ttl_ms      how long a dead record lives
--   then result        one: the parent's result bytes ("" unless ok)
-- Reply: {word}:
--   NOTED              counted; parents are still running
--   AGAIN              this parent had told it already: nothing changed
--   EARLY              the child is not there yet: the notice is kept
--                      (one day, unless the child comes)
--   STRAY              the sender is not one of the child's parents
--   RELEASED           every parent is done: the child is in the stream
--   DEAD               a parent is dead and on_parent_dead is dead: the
--                      child is dead ("parent T:id is dead"); its own
--                      dependents are told through its type's outbox
--   CASCADE            DEAD, and the outbox has an entry to drain
-- A notice is a field of parents:<id> set with HSETNX: a notice delivered
-- twice (a drain that crashed after delivering and before deleting its
-- outbox entry) counts once. At release parents:<id> becomes
-- parent_results:<id>, so a later task of the same id starts with no
-- notice; the released entry carries the field parents ("T:id,..."), by
-- which the host finds parent_results:<id> for the child's plugin
-- (wharf_parent_result). It keeps the parents' results a week from the
-- release, whatever their result_ttl says.
local KEEP_MS = 604800000
local id, state = ARGV[1], ARGV[3]
if state ~= 'check' then
  local value = state == 'o' and ('o' .. ARGV[#ARGV]) or 'd'
  if redis.call('HSETNX', KEYS[2], ARGV[2], value) == 0 then
    return {'AGAIN'}
  end
end
local w = redis.call('HMGET', KEYS[1], 'id', 'type', 'payload', 'attempt',
                     'enqueued_at', 'trace', 'parents', 'on_parent_dead')
if not w[1] then
  redis.call('PEXPIRE', KEYS[2], 86400000)
  return {'EARLY'}
end
local listed = ',' .. w[7] .. ','
if state ~= 'check' and not string.find(listed, ',' .. ARGV[2] .. ',', 1,
                                        true) then
  redis.call('HDEL', KEYS[2], ARGV[2])
  return {'STRAY'}
end
local got = redis.call('HGETALL', KEYS[2])
local have, dead_parent = {}, nil
for i = 1, #got, 2 do have[got[i]] = string.sub(got[i + 1], 1, 1) end
local waiting = false
for parent in string.gmatch(w[7], '[^,]+') do
  if not have[parent] then
    waiting = true
  elseif have[parent] == 'd' and not dead_parent then
    dead_parent = parent
  end
end
if waiting then return {'NOTED'} end
redis.call('ZREM', KEYS[3], id)
redis.call('DEL', KEYS[1])
if dead_parent and w[8] ~= 'run' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('DEL', KEYS[7])
  redis.call('HSET', KEYS[7], 'id', id, 'type', w[2], 'payload', w[3],
             'attempt', w[4], 'enqueued_at', w[5], 'trace', w[6],
             'error', 'parent ' .. dead_parent .. ' is dead',
             'worker', '', 'failed_at', now)
  redis.call('PEXPIRE', KEYS[7], ARGV[4])
  redis.call('ZADD', KEYS[6], now, id)
  redis.call('DEL', KEYS[2])
  local to = redis.call('SMEMBERS', KEYS[8])
  if #to == 0 then return {'DEAD'} end
  redis.call('XADD', KEYS[9], '*', 'from', w[2] .. ':' .. id, 'state', 'd',
             'result', '', 'to', table.concat(to, '\n'))
  redis.call('DEL', KEYS[8])
  return {'CASCADE'}
end
redis.call('RENAME', KEYS[2], KEYS[10])
redis.call('PEXPIRE', KEYS[10], KEEP_MS)
local entry = redis.call('XADD', KEYS[4], '*', 'id', id, 'type', w[2],
                         'payload', w[3], 'attempt', w[4],
                         'enqueued_at', w[5], 'trace', w[6],
                         'parents', w[7])
redis.call('HSET', KEYS[5], id, entry)
return {'RELEASED'}
