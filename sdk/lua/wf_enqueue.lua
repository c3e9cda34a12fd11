-- wf_enqueue: adds one task of a workflow in its own slot: a group member
-- (runnable at once, with the group noted as its dependent) or a child
-- held until its parents have finished.
-- KEYS:
--   1 policy
--   2 stream
--   3 entries
--   4 held             ids held for their parents, scored by enqueue time
--   5 seen:<id>
--   6 wait:<id>        a held task's envelope and what it waits for
--   7 parents:<id>     what its parents' notices said (wf_notify.lua)
--   8 children:<id>    its dependents (a set)
-- ARGV:
--   1 type
--   2 id
--   3 trace
--   4 protocols        the protocol versions the client speaks
--   5 mode             "member" or "held"
--   6 dependent        member: "group <G>", noted in children:<id>
--   7 parents          held: "<type>:<id>,..." (its parents, in order)
--   8 on_parent_dead   held: "dead" or "run"
--   9 max_payload      9-10 the defaults while no host published a policy
--   10 idempotency_ttl
--   then payload       one: the task's payload (binary-safe)
-- Reply: {word, limit}:
--   OK                 a member was added to the stream
--   HELD               a child was added held: the producer then tells it
--                      of each parent already finished, and calls
--                      wf_notify.lua once with state "check"
--   DUPLICATE          the id is taken (its seen marker lives, or it is
--                      held): nothing added
--   TOO_LARGE          limit = max_payload
--   PROTOCOL           limit = the hosts' protocol version
-- A held task's envelope lives in wait:<id> (no TTL) until its parents
-- have all told it; notices that came before it (a parent that finished
-- between the child's registration and this call) are in parents:<id>
-- already, with a TTL in case the child never came: it is made lasting
-- here. Ids are given by the producer (a workflow names its tasks).
local payload = ARGV[#ARGV]
local p = redis.call('HMGET', KEYS[1], 'max_payload', 'idempotency_ttl',
                     'protocol')
if p[3] and not string.find(',' .. ARGV[4] .. ',', ',' .. p[3] .. ',', 1,
                            true) then
  return {'PROTOCOL', tonumber(p[3]) or 0}
end
local max_payload = tonumber(p[1]) or tonumber(ARGV[9])
if #payload > max_payload then return {'TOO_LARGE', max_payload} end
local ttl = p[2]
if not (tonumber(ttl) and tonumber(ttl) >= 1) then ttl = ARGV[10] end
local id = ARGV[2]
if redis.call('ZSCORE', KEYS[4], id) or
   not redis.call('SET', KEYS[5], '1', 'NX', 'PX', ttl) then
  return {'DUPLICATE', 0}
end
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 +
                                  math.floor(tonumber(t[2]) / 1000))
if ARGV[5] == 'member' then
  redis.call('SADD', KEYS[8], ARGV[6])
  local entry = redis.call('XADD', KEYS[2], '*', 'id', id, 'type', ARGV[1],
                           'payload', payload, 'attempt', '1',
                           'enqueued_at', now, 'trace', ARGV[3])
  redis.call('HSET', KEYS[3], id, entry)
  return {'OK', 0}
end
redis.call('DEL', KEYS[6])
redis.call('HSET', KEYS[6], 'id', id, 'type', ARGV[1], 'payload', payload,
           'attempt', '1', 'enqueued_at', now, 'trace', ARGV[3],
           'parents', ARGV[7], 'on_parent_dead', ARGV[8])
redis.call('ZADD', KEYS[4], now, id)
redis.call('PERSIST', KEYS[7])
return {'HELD', 0}
