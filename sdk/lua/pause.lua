-- pause: pauses a type, or resumes it (wharf pause / resume, the
--    console). While paused[T] exists no host starts a task of the type
--    (begin.lua answers -3 and takes nothing); running tasks finish,
--    enqueues still succeed, and the hosts leave the type out of their
--    claims once their figures show the pause (about a second).
-- KEYS:
--   1 paused
--   2 policy           present once a host has served the type
-- ARGV:
--   1 mode             "pause" or "resume"
--   2 for_ms           pause: how long it lasts, in ms; 0 until resumed
-- Reply: {word, since_ms, left_ms, served}: since when the type is (or
--       was) paused, in ms (Redis TIME), 0 if it was not; how long the
--       pause has left, -1 for no end, 0 after a resume; and 1 when a
--       host has ever served the type (0: a typo, or a type to come):
--   PAUSED             it was running and is paused now
--   EXTENDED           it was paused already: it keeps its start, and
--                      the new length (or none) replaces the old one
--   RESUMED            it was paused and runs again now
--   RUNNING            a resume of a type that was not paused
-- The key holds the start of the pause; a pause with a length is the key
-- with that TTL, so it ends by itself on every host at once.
local since = redis.call('GET', KEYS[1])
local served = redis.call('EXISTS', KEYS[2])
if ARGV[1] == 'resume' then
  if not since then return {'RUNNING', 0, 0, served} end
  redis.call('DEL', KEYS[1])
  return {'RESUMED', tonumber(since), 0, served}
end
local word = 'EXTENDED'
if not since then
  local time = redis.call('TIME')
  since = string.format('%d', tonumber(time[1]) * 1000 +
                              math.floor(tonumber(time[2]) / 1000))
  word = 'PAUSED'
end
local for_ms = tonumber(ARGV[2])
if for_ms > 0 then
  redis.call('SET', KEYS[1], since, 'PX', for_ms)
  return {word, tonumber(since), for_ms, served}
end
redis.call('SET', KEYS[1], since)
return {word, tonumber(since), -1, served}
