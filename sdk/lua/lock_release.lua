-- lock_release: deletes a task's processing lock for an operator (wharf
-- locks release), unless a live run holds it.
-- KEYS:
--   1 lock:<id>
--   2 stream
--   3 policy
-- ARGV:
--   1 id
--   2 group
--   3 visibility_timeout_ms  to use when the policy hash has none
--   4 force            "force" to delete without looking
--   5 most_pending     the most pending entries to look at
-- Reply: a word, and what it says:
--   NONE               {'NONE'}: no lock
--   RELEASED           {'RELEASED'}
--   HELD               {'HELD', consumer, idle_ms}: an entry of the id is
--                      pending under consumer, idle for less than
--                      visibility_timeout: its run is alive, and deleting
--                      the lock would throw its result away as stale and
--                      run it twice
--   UNSURE             {'UNSURE', n}: more than n entries pending: not all
--                      were looked at
-- The hosts publish visibility_timeout in the policy hash; an entry idle
-- for longer is one whose host went silent (it is taken over anyway).
-- Entries are read a page at a time, and each one idle for less than the
-- timeout is read (XRANGE) for its id field.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NONE'} end
if ARGV[4] ~= 'force' then
  local visibility = tonumber(redis.call('HGET', KEYS[3], 'visibility_timeout'))
  if not visibility then visibility = tonumber(ARGV[3]) end
  local most, page, seen, from = tonumber(ARGV[5]), 500, 0, '-'
  while true do
    local p = redis.pcall('XPENDING', KEYS[2], ARGV[2], from, '+', page)
    -- No stream or no group: nothing is pending.
    if type(p) ~= 'table' or p.err then break end
    for _, e in ipairs(p) do
      local idle = tonumber(e[3])
      if idle < visibility then
        local x = redis.call('XRANGE', KEYS[2], e[1], e[1])
        local f = x[1] and x[1][2] or {}
        for j = 1, #f - 1, 2 do
          if f[j] == 'id' then
            if f[j + 1] == ARGV[1] then return {'HELD', e[2], idle} end
            break
          end
        end
      end
    end
    seen = seen + #p
    if #p < page then break end
    if seen >= most then return {'UNSURE', seen} end
    from = '(' .. p[#p][1]
  end
end
redis.call('DEL', KEYS[1])
return {'RELEASED'}
