-- task_detail: one task's status and detail, read at once (the console's
-- GET /api/task).
-- KEYS:
--   1 dead
--   2 dead:<id>        where a dead task's envelope is kept
--   3 task:<id>        where it was kept before, and where a delayed
--                      task's is
--   4 delayed
--   5 lock:<id>
--   6 result:<id>
--   7 seen:<id>
-- ARGV:
--   1 id
--   2 preview          bytes of the payload and of the result to return
-- Reply: {status, fields, payload_bytes, died_at, due_at, lock_ms_left,
--       result_bytes, result_preview}: fields is the envelope's hash
--       (dead:<id>, else task:<id>) flat, its payload cut to preview
--       bytes; died_at and due_at are "" when the task is not dead or
--       not delayed (due_at also while it waits for a concurrency slot:
--       it has no time); lock_ms_left is the lock's PTTL; result_preview is
--       "" when no result is cached. The status is the first that holds:
--   dead      it is in the dead set
--   delayed   it waits in the delayed set
--   running   its lock is held
--   done      a result is cached
--   queued    its enqueue marker (seen:<id>) lives
--   unknown   none of these
-- Bounded: two small hashes and a few O(1) or O(log n) reads, the
-- previews cut here rather than sent whole.
local id, cut = ARGV[1], tonumber(ARGV[2])
local died = redis.call('ZSCORE', KEYS[1], id)
local due = redis.call('ZSCORE', KEYS[4], id)
local waits = due and tonumber(due) >= 4503599627370496 -- finish.lua's PARK_AT
local lock = redis.call('PTTL', KEYS[5])
local rlen = redis.call('STRLEN', KEYS[6])
local rexists = redis.call('EXISTS', KEYS[6])
local seen = redis.call('EXISTS', KEYS[7])
local h = redis.call('HGETALL', KEYS[2])
if #h == 0 then h = redis.call('HGETALL', KEYS[3]) end
local plen = 0
for i = 1, #h, 2 do
  if h[i] == 'payload' then
    plen = #h[i + 1]; h[i + 1] = string.sub(h[i + 1], 1, cut)
  end
end
local status = 'unknown'
if died then status = 'dead'
elseif due then status = 'delayed'
elseif lock > 0 or lock == -1 then status = 'running'
elseif rexists == 1 then status = 'done'
elseif seen == 1 then status = 'queued' end
local preview = ''
if rexists == 1 then preview = redis.call('GETRANGE', KEYS[6], 0,
  cut - 1) end
if waits then due = '' end
return {status, h, plen, died or '', due or '', lock, rlen, preview}
