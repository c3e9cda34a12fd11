-- dead_replay: puts one dead task back into the stream (wharf dead
-- replay): attempt 1, no error; unknown fields are kept but expires_at
-- (an operator's replay is meant to run, past its expiry too).
-- KEYS:
--   1 dead
--   2 dead:<id>
--   3 stream
--   4 task:<id>
--   5 delayed
--   6 entries          the new entry is indexed there
-- ARGV:
--   1 id
--   2 type
-- Reply: a word:
--   OK                 replayed
--   NOT_FOUND          not in the dead set
--   MISSING            in the dead set without a record: dropped from it
-- A record written before dead tasks had their own key is task:<id>; it is
-- used when dead:<id> is missing, unless the id waits in the delayed set
-- (then task:<id> belongs to a new run of the id).
-- A script is not rolled back when a command in it fails, so everything
-- is read, and the keys written after the first write (stream, entries)
-- are checked for their kind, before that first write: a key of the wrong
-- kind is the error reply "WRONGTYPE <key> holds a <kind>, not a <kind>:
-- nothing was replayed", and the task stays dead as it was.
local function wrong_kind(key, want)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' or kind == want then return nil end
  return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. kind ..
                           ', not a ' .. want .. ': nothing was replayed')
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 'NOT_FOUND'
end
local record = KEYS[2]
local h = redis.call('HGETALL', record)
if #h == 0 and not redis.call('ZSCORE', KEYS[5], ARGV[1]) then
  record = KEYS[4]
  h = redis.call('HGETALL', record)
end
if #h == 0 then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 'MISSING'
end
local bad = wrong_kind(KEYS[3], 'stream') or wrong_kind(KEYS[6], 'hash')
if bad then return bad end
local drop = {id = 1, type = 1, payload = 1, attempt = 1,
              enqueued_at = 1, trace = 1, error = 1, failed_at = 1,
              worker = 1, expires_at = 1}
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
redis.call('ZREM', KEYS[1], ARGV[1])
local entry = redis.call('XADD', KEYS[3], '*', unpack(f))
redis.call('HSET', KEYS[6], ARGV[1], entry)
redis.call('DEL', record)
return 'OK'
