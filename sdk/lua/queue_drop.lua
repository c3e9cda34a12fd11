-- queue_drop: removes a page of a type's waiting tasks (wharf queue drop).
-- KEYS:
--   1 stream
--   2 delayed
--   3 entries
--   then <per_task>    for "delayed" task:<id> and seen:<id>, for "ready"
--                      seen:<id>.
-- ARGV:
--   1 mode             "delayed" or "ready"
--   2 group
--   then <per_task>    for "delayed" its id (as ZRANGE read it), for
--                      "ready" its entry id and its id (as XRANGE read
--                      them).
-- Reply: {removed, running}: how many tasks it removed, and how many it
--       left because they are running (their entry is pending in the
--       group: their runs end as they would have).
-- A delayed task goes with its envelope; a ready entry is deleted from the
-- stream and from entries; either way the id's seen marker goes, so the
-- same task may be enqueued again at once.
-- Nothing is written when a key holds the wrong kind: a script is not
-- rolled back, so entries (read after the first XDEL) is checked first,
-- and so is the key the first write goes to; the error reply is
-- "WRONGTYPE <key> holds a <kind>, not a <kind>: nothing was dropped".
local function wrong_kind(key, want)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' or kind == want then return nil end
  return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. kind ..
                           ', not a ' .. want .. ': nothing was dropped')
end
local bad
if ARGV[1] == 'delayed' then
  bad = wrong_kind(KEYS[2], 'zset')
else
  bad = wrong_kind(KEYS[1], 'stream') or wrong_kind(KEYS[3], 'hash')
end
if bad then return bad end
local removed, running = 0, 0
if ARGV[1] == 'delayed' then
  for i = 3, #ARGV do
    if redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
      redis.call('DEL', KEYS[2 + 2 * (i - 2)], KEYS[3 + 2 * (i - 2)])
      removed = removed + 1
    end
  end
  return {removed, 0}
end
local pending = {}
local summary = redis.pcall('XPENDING', KEYS[1], ARGV[2])
if type(summary) == 'table' and not summary.err and summary[1] > 0 then
  local p = redis.call('XPENDING', KEYS[1], ARGV[2], '-', '+', summary[1])
  for _, e in ipairs(p) do pending[e[1]] = true end
end
for i = 3, #ARGV - 1, 2 do
  local entry, id = ARGV[i], ARGV[i + 1]
  if pending[entry] then
    running = running + 1
  elseif redis.call('XDEL', KEYS[1], entry) == 1 then
    redis.call('DEL', KEYS[3 + (i - 1) / 2])
    local v = redis.call('HGET', KEYS[3], id)
    if v and string.match(v, '^(%S+)') == entry then
      redis.call('HDEL', KEYS[3], id)
    end
    removed = removed + 1
  end
end
return {removed, running}
