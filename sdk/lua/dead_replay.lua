-- dead_replay: puts one dead task back into the stream (wharf dead
-- replay): attempt 1, no error; unknown fields are kept.
-- KEYS: 1 dead, 2 dead:<id>, 3 stream, 4 task:<id>, 5 delayed, 6 entries
--       (the new entry is indexed there).
-- ARGV: 1 id, 2 type.
-- Reply: OK; NOT_FOUND (not in the dead set); or MISSING (in the dead set
--       without a record: dropped from it).
-- A record written before dead tasks had their own key is task:<id>; it is
-- used when dead:<id> is missing, unless the id waits in the delayed set
-- (then task:<id> belongs to a new run of the id).
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 'NOT_FOUND'
end
redis.call('ZREM', KEYS[1], ARGV[1])
local record = KEYS[2]
local h = redis.call('HGETALL', record)
if #h == 0 and not redis.call('ZSCORE', KEYS[5], ARGV[1]) then
  record = KEYS[4]
  h = redis.call('HGETALL', record)
end
if #h == 0 then return 'MISSING' end
local drop = {id = 1, type = 1, payload = 1, attempt = 1,
              enqueued_at = 1, trace = 1, error = 1, failed_at = 1,
              worker = 1}
local v, f = {}, {}
for i = 1, #h, 2 do v[h[i]] = h[i + 1] end
local function add(name, value)
  if value then f[#f + 1] = name; f[#f + 1] = value end
end
add('id', v.id or ARGV[1])
add('type', v.type or ARGV[2])
add('payload', v.payload)
add('attempt', '1')
add('enqueued_at', v.enqueued_at)
add('trace', v.trace)
for i = 1, #h, 2 do
  if not drop[h[i]] then add(h[i], h[i + 1]) end
end
local entry = redis.call('XADD', KEYS[3], '*', unpack(f))
redis.call('HSET', KEYS[6], ARGV[1], entry)
redis.call('DEL', record)
return 'OK'
