-- figures: a type's queue figures, each in O(1), and its backpressure.
--    Publishes the backlog (ready + delayed) and sets or clears the
--    pressure flag with hysteresis between the watermarks.
-- KEYS:
--   1 stream
--   2 delayed
--   3 dead
--   4 pressure         the flag: set while the backlog is too long
--   5 backlog          the backlog, for producers to read
--   6 paused           set while the type is paused (pause.lua)
--   7 running          the concurrency slots (begin.lua)
--   8 held             workflows: tasks held for their parents
-- ARGV:
--   1 group
--   2 high             the high watermark: over it, the flag is set
--   3 low              the low watermark: under it, the flag is cleared
--   4 ttl_ms           how long the flag and the backlog live
-- Reply: {ready, running, delayed, dead, pressure, paused, slots}: ready
--       leaves out the running (never below 0); pressure is 1 while the
--       flag is set; paused is the pause's time left in ms while the type
--       is paused (-1: until resumed), else -2 (PTTL's answers); slots
--       is how many concurrency slots are held (0 without a limit);
--       then held (tasks waiting for their parents) and the oldest held
--       task's age in ms (0 when none).
-- Between the watermarks the flag keeps its state: PEXPIRE renews it if
-- it is there. Every live host refreshes both keys, so they clear
-- themselves once all hosts are gone.
local len = redis.call('XLEN', KEYS[1])
local running = 0
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1])
if type(p) == 'table' and p.err == nil then running = p[1] end
local delayed = redis.call('ZCARD', KEYS[2])
local dead = redis.call('ZCARD', KEYS[3])
local ready = len - running
if ready < 0 then ready = 0 end
local backlog = ready + delayed
redis.call('SET', KEYS[5], backlog, 'PX', ARGV[4])
local pressure = 0
if backlog > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[4], '1', 'PX', ARGV[4])
  pressure = 1
elseif backlog < tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[4])
elseif redis.call('PEXPIRE', KEYS[4], ARGV[4]) == 1 then
  pressure = 1
end
local held, oldest = redis.call('ZCARD', KEYS[8]), 0
if held > 0 then
  local first = redis.call('ZRANGE', KEYS[8], 0, 0, 'WITHSCORES')
  local t = redis.call('TIME')
  oldest = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -
           tonumber(first[2])
  if oldest < 0 then oldest = 0 end
end
return {ready, running, delayed, dead, pressure,
        redis.call('PTTL', KEYS[6]), redis.call('ZCARD', KEYS[7]), held,
        oldest}
