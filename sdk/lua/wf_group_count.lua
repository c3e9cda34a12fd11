-- wf_group_count: counts a member's end in its group, in the group's
-- slot, and says when the callback is due.
-- KEYS:
--   1 group            the group's hash (wf_group_create.lua)
--   2 group_done       member -> "o" (ok) or "d" (dead)
--   3 group_members
-- ARGV:
--   1 member           "<type>:<id>" ("" with check and confirm)
--   2 state            "o", "d", "check" (is the callback due?) or
--                      "confirm" (the callback is enqueued)
-- Reply: {word, type, id, payload}:
--   COUNTED            counted; members are still running
--   AGAIN              counted before: nothing changed
--   STRAY              not a member of the group
--   FIRE               every member has ended and the callback is not
--                      confirmed: enqueue it (type, id "group:<G>",
--                      payload the JSON {"group", "ok", "dead",
--                      "members": {"<type>:<id>": "ok"|"dead"},
--                      "payload"}), then confirm
--   CONFIRMED          the callback was enqueued (confirm marks it)
--   UNKNOWN            no such group
--   CANCELLED          the group was cancelled: no callback
-- A count is a field of group_done set with HSETNX, so a notice
-- delivered twice counts once. FIRE is answered again (to a re-driven
-- notice or a sweep's check) until confirm: the callback's id is fixed,
-- so the enqueue of a second FIRE is a duplicate (its seen marker).
local g = redis.call('HMGET', KEYS[1], 'n', 'type', 'payload', 'enqueued',
                     'cancelled')
if not g[1] then return {'UNKNOWN', '', '', ''} end
local group = string.match(KEYS[1], '{(.-)}')
local state = ARGV[2]
if state == 'confirm' then
  redis.call('HSET', KEYS[1], 'enqueued', '1')
  return {'CONFIRMED', '', '', ''}
end
local word = 'COUNTED'
if state == 'o' or state == 'd' then
  if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 0 then
    return {'STRAY', '', '', ''}
  end
  if redis.call('HSETNX', KEYS[2], ARGV[1], state) == 0 then word = 'AGAIN' end
end
if g[5] then return {'CANCELLED', '', '', ''} end
if g[4] then return {'CONFIRMED', '', '', ''} end
if redis.call('HLEN', KEYS[2]) < tonumber(g[1]) then
  return {word, '', '', ''}
end
redis.call('HSETNX', KEYS[1], 'fired', '1')
local done = redis.call('HGETALL', KEYS[2])
local members, ok, dead = {}, 0, 0
for i = 1, #done, 2 do
  if done[i + 1] == 'o' then
    members[done[i]], ok = 'ok', ok + 1
  else
    members[done[i]], dead = 'dead', dead + 1
  end
end
return {'FIRE', g[2], 'group:' .. group,
        cjson.encode({group = group, ok = ok, dead = dead,
                      members = members, payload = g[3]})}
