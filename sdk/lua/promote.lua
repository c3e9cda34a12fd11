-- promote: moves due tasks from the delayed set back into the stream.
-- KEYS:
--   1 delayed
--   2 stream
--   3 entries
--   then task:<id>     of each id (same order).
-- ARGV:
--   then id            the ids (as due read them).
-- Reply: the number moved.
-- Each id still due goes into the stream with the fields of its envelope
-- (error, failed_at and worker stay behind) and its envelope is deleted.
-- Each one moved is indexed in entries (id -> its new stream entry id,
-- one HSET per call). An id with no envelope (a cancel took it) is
-- dropped from the delayed set. Dead records
-- (dead:<id>) are never read here: a dead task is not promoted.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local moved, index = 0, {}
for i, id in ipairs(ARGV) do
  local score = redis.call('ZSCORE', KEYS[1], id)
  if score and tonumber(score) <= now then
    local h = redis.call('HGETALL', KEYS[3 + i])
    if #h > 0 then
      local fields = {}
      for j = 1, #h, 2 do
        local k = h[j]
        if k ~= 'error' and k ~= 'failed_at' and k ~= 'worker' then
          fields[#fields + 1] = k
          fields[#fields + 1] = h[j + 1]
        end
      end
      index[#index + 1] = id
      index[#index + 1] = redis.call('XADD', KEYS[2], '*', unpack(fields))
      moved = moved + 1
    end
    redis.call('DEL', KEYS[3 + i])
    redis.call('ZREM', KEYS[1], id)
  end
end
if #index > 0 then redis.call('HSET', KEYS[3], unpack(index)) end
return moved
