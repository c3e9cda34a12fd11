-- wf_register: registers a child (a task enqueued with --after) at one of
-- its parents, in the parent's slot, and says where the parent is.
-- KEYS:
--   1 children:<id>    the parent's dependents (a set)
--   2 entries          the parent type's index of queued and running ids
--   3 delayed
--   4 held
--   5 dead:<id>
-- ARGV:
--   1 id               the parent's id
--   2 child            "child <type> <id>": the dependent to note
-- Reply: {word, result}:
--   WAITING            the parent is queued, running, delayed or held: the
--                      child is noted and the parent's final finish will
--                      tell it (through the parent type's outbox)
--   DONE               the parent finished ok; result = its result bytes
--   DEAD               the parent is dead
--   UNKNOWN            none of these: nothing is noted (the producer
--                      refuses the child)
-- A run in flight comes first: an id enqueued again after it finished is
-- its new run. A child is never noted at a parent that is not in flight,
-- so every parent of a child existed before the child did: a cycle
-- cannot form (a task would have to exist before itself).
-- result:<id> is read without being named in KEYS: Redis takes every key
-- an EVALSHA names as written too, and a producer's ACL may read results
-- only (etc/wharf.acl). It is dead:<id>'s name with result in place of
-- dead, so in the same slot.
local id = ARGV[1]
local result_key = string.sub(KEYS[5], 1, #KEYS[5] - #'dead:' - #id) ..
  'result:' .. id
if redis.call('HEXISTS', KEYS[2], id) == 1 or
   redis.call('ZSCORE', KEYS[3], id) or redis.call('ZSCORE', KEYS[4], id) then
  redis.call('SADD', KEYS[1], ARGV[2])
  return {'WAITING', ''}
end
local result = redis.call('GET', result_key)
if result then return {'DONE', result} end
if redis.call('EXISTS', KEYS[5]) == 1 then return {'DEAD', ''} end
return {'UNKNOWN', ''}
