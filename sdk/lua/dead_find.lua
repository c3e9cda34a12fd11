-- dead_find: which ids of a page of a dead set match a search (wharf dead
--    list, replay and purge with filters). The records are read here, in
--    Redis, so only the matches travel, and a page of a few hundred ids
--    keeps each call short.
-- KEYS:
--   1 dead
--   then dead:<id>     of each id of the page,
--   then task:<id>     of the same ids, in the same order (a record
--                      written before dead tasks had their own key)
-- ARGV:
--   1 grep             a text the error must hold, byte for byte ("": any)
--   2 min_attempts     at least this many attempts ("0": any)
--   3 id_prefix        the id starts with it ("": any)
--   then id            the ids of the page
-- Reply: four strings per match, in the page's order: its id, when it
--       died (ms), its attempts and its error. An id no longer in the dead
--       set is left out.
-- The time range is the caller's, in the ZRANGEBYSCORE that made the
-- page. task:<id> is read only when dead:<id> has no error (a record of
-- an older host).
local n = (#KEYS - 1) / 2
local grep, min, prefix = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local out = {}
for i = 1, n do
  local id = ARGV[3 + i]
  local died = redis.call('ZSCORE', KEYS[1], id)
  if died and string.sub(id, 1, #prefix) == prefix then
    local r = redis.call('HMGET', KEYS[1 + i], 'attempt', 'error')
    if not r[2] then
      r = redis.call('HMGET', KEYS[1 + n + i], 'attempt', 'error')
    end
    local attempt, err = r[1] or '', r[2] or ''
    if (tonumber(attempt) or 0) >= min and
       (grep == '' or string.find(err, grep, 1, true)) then
      out[#out + 1] = id
      out[#out + 1] = died
      out[#out + 1] = attempt
      out[#out + 1] = err
    end
  end
end
return out
