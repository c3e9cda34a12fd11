-- limit_wake: each host's pass, about once a second, over a type with a
--    concurrency_limit: drops the slots whose end has passed (their run
--    died with its host, and no finish gave them back), then makes due
--    now as many waiting tasks as slots are free, oldest first; and with
--    a limit_key, the oldest task waiting for a slot of its key's value
--    if it has waited over a second.
-- KEYS:
--   1 running          the concurrency slots (see begin.lua)
--   2 delayed
-- ARGV:
--   1 limit            the type's concurrency_limit
-- Reply: {slots, woken}: the slots held after the pass, and how many
--       waiting tasks it made due.
-- Finish wakes waiting tasks as it gives slots back; this pass is for
-- the slots nobody gives back, so a host killed with -9 holds its slots
-- no longer than lock_ttl (the slots live as long as the locks, which
-- only a live run renews). Waiting tasks are scored 2^52 + the time they
-- began to wait (finish.lua), never due by themselves.
-- A task waiting for a slot of its limit_key's value is scored 2^52 +
-- 2^51 + that time: its value's slots are not in running (begin.lua), so
-- they are not counted here; a finish wakes such tasks as it ends runs.
-- This pass wakes one of them, the oldest, when it has waited a second:
-- that covers a wake that went to a task cancelled before it began (a
-- finish then woke nobody who could run). One that finds its value still
-- full parks again at the back, so a long wait costs one task a pass,
-- not one per waiting task.
local PARK_AT = 4503599627370496
local PARK_KEYED = PARK_AT + 2251799813685248
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local slots = redis.call('ZCARD', KEYS[1])
local free = tonumber(ARGV[1]) - slots
local ids = {}
if free > 0 then
  ids = redis.call('ZRANGEBYSCORE', KEYS[2], PARK_AT, '(' .. PARK_KEYED,
                   'LIMIT', 0, free)
end
local keyed = redis.call('ZRANGEBYSCORE', KEYS[2], PARK_KEYED,
                         PARK_KEYED + now - 1000, 'LIMIT', 0, 1)
if #keyed > 0 then ids[#ids + 1] = keyed[1] end
if #ids == 0 then return {slots, 0} end
local due = {}
for _, id in ipairs(ids) do
  due[#due + 1] = now
  due[#due + 1] = id
end
redis.call('ZADD', KEYS[2], 'XX', unpack(due))
return {slots, #ids}
