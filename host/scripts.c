/* The host's Lua scripts. Each moves a task from one place to another in
 * one atomic step, so no crash between two commands can leave a task
 * half-moved. Every key a script touches comes in KEYS (Redis Cluster
 * safe: all of them carry the type's hash tag). Times come from Redis TIME,
 * so hosts with skewed clocks agree on due times. */
#include "scripts.h"

/* begin: KEYS fence, then result:<id> of each task, then lock:<id> of
 * each task (same order); ARGV lock_ttl_ms. Per task, in order: 0 when
 * its result is cached; else it draws a fresh fencing token from fence
 * and takes the lock with SET NX PX: the token (a string), or -1 when
 * another run holds the lock.
 * Per call, not per task: one EXISTS over every result key answers the
 * common case (none cached), and one INCRBY draws the tokens: the same
 * tokens, in the same order, as one INCR per task. A token is formatted
 * as an integer (%d, cheap) rather than left to Redis's %.17g. Only the
 * first write can fail (out of memory, before anything was written):
 * then the call fails as a whole. */
script script_begin = {
    .name = "begin",
    .source =
        "local call, format, keys, ttl = redis.call, string.format, KEYS,"
        " ARGV[1]\n"
        "local n = (#keys - 1) / 2\n"
        "local cached, fresh = nil, n\n"
        "if call('EXISTS', unpack(keys, 2, n + 1)) > 0 then\n"
        "  cached, fresh = {}, 0\n"
        "  for i = 1, n do\n"
        "    cached[i] = call('EXISTS', keys[1 + i]) == 1\n"
        "    if not cached[i] then fresh = fresh + 1 end\n"
        "  end\n"
        "end\n"
        "local token, out = 0, {}\n"
        "if fresh > 0 then\n"
        "  token = call('INCRBY', keys[1], fresh) - fresh\n"
        "end\n"
        "for i = 1, n do\n"
        "  if cached and cached[i] then\n"
        "    out[i] = 0\n"
        "  else\n"
        "    token = token + 1\n"
        "    local t = format('%d', token)\n"
        "    if call('SET', keys[1 + n + i], t, 'NX', 'PX', ttl) then\n"
        "      out[i] = t\n"
        "    else\n"
        "      out[i] = -1\n"
        "    end\n"
        "  end\n"
        "end\n"
        "return out\n"};

/* finish: KEYS stream, delayed, dead, then for each task but an ack its
 * lock:<id>, then (same order) its result:<id> (ok) or task:<id> (retry,
 * dead). ARGV group, consumer (also the envelope's worker),
 * result_ttl_ms, dead_ttl_ms, type, the tasks' kinds (one letter each:
 * a ack, o ok, r retry or reschedule, d dead), the entry id of every
 * task, the token of each task but an ack ("" when the run holds no
 * lock), then per task but an ack: o its result; r the envelope (id,
 * payload, attempt of the next run, enqueued_at, trace, error) and
 * delay_ms; d the envelope.
 * A run still owns its task only if the entry is pending under this
 * consumer and, when it took the lock, the lock still holds its token; a
 * task it no longer owns is stale and nothing of it is written.
 * An owned task: ok stores its result (an empty one too, TTL
 * result_ttl); retry writes the envelope task:<id> and puts the id in the
 * delayed set at now + delay; dead writes the envelope (TTL dead_ttl),
 * puts the id in the dead set at now, and ids older than dead_ttl leave
 * that set (dead_max is kept by script_trim_dead); an ack writes
 * nothing. Then its entry is acked and deleted and its lock released. A
 * retry or dead write that fails (a key of the wrong type) leaves that
 * task pending and locked, and the others go on; a result SET can only
 * fail as the call's first write (out of memory), failing the call.
 * Returns {codes, errors...}: codes has one letter per task, k (done as
 * asked), s (stale) or e (failed: its message is the next of errors).
 * The checks and the acks take one command per call, not per task:
 * XPENDING over the consumer's oldest entries (one XPENDING per entry
 * only for those it did not reach), one MGET of the locks, one XACK,
 * XDEL and DEL. A call of nothing but owned ok tasks (the common case)
 * takes a short path with no per-task tables. */
script script_finish = {
    .name = "finish",
    .source =
        "local call, keys, argv = redis.call, KEYS, ARGV\n"
        "local group, consumer, kinds = argv[1], argv[2], argv[6]\n"
        "local n, m = #kinds, (#keys - 3) / 2\n"
        "local p = call('XPENDING', keys[1], group, '-', '+', n, consumer)\n"
        "local pending = {}\n"
        "for j = 1, #p do pending[p[j][1]] = true end\n"
        "local function owns(entry)\n"
        "  if pending[entry] then return true end\n"
        "  return #p >= n and #call('XPENDING', keys[1], group, entry, entry,"
        " 1, consumer) > 0\n"
        "end\n"
        "if m == n and not string.find(kinds, '[^o]') then\n"
        "  local v = call('MGET', unpack(keys, 4, 3 + n))\n"
        "  local all = true\n"
        "  for i = 1, n do\n"
        "    local token = argv[6 + n + i]\n"
        "    if token == '' or v[i] ~= token or not (pending[argv[6 + i]] or"
        " owns(argv[6 + i])) then\n"
        "      all = false\n"
        "      break\n"
        "    end\n"
        "  end\n"
        "  if all then\n"
        "    local ttl = argv[3]\n"
        "    for i = 1, n do\n"
        "      call('SET', keys[3 + n + i], argv[6 + 2 * n + i], 'PX', ttl)\n"
        "    end\n"
        "    call('XACK', keys[1], group, unpack(argv, 7, 6 + n))\n"
        "    call('XDEL', keys[1], unpack(argv, 7, 6 + n))\n"
        "    call('DEL', unpack(keys, 4, 3 + n))\n"
        "    return {string.rep('k', n)}\n"
        "  end\n"
        "end\n"
        "local function failed(r) return type(r) == 'table' and r.err end\n"
        "local owned, locks, holders, slots = {}, {}, {}, {}\n"
        "local t = 0\n"
        "for i = 1, n do\n"
        "  owned[i] = owns(ARGV[6 + i])\n"
        "  if string.sub(kinds, i, i) ~= 'a' then\n"
        "    t = t + 1\n"
        "    if owned[i] and ARGV[6 + n + t] ~= '' then\n"
        "      locks[#locks + 1] = KEYS[3 + t]\n"
        "      holders[#locks], slots[#locks] = i, t\n"
        "    end\n"
        "  end\n"
        "end\n"
        "if #locks > 0 then\n"
        "  local v = redis.call('MGET', unpack(locks))\n"
        "  for j = 1, #locks do\n"
        "    if v[j] ~= ARGV[6 + n + slots[j]] then owned[holders[j]] = false"
        " end\n"
        "  end\n"
        "end\n"
        "local now, dead_ttl, died = nil, tonumber(ARGV[4]), false\n"
        "local codes, out, acks, releases = {}, {''}, {}, {}\n"
        "local a = 7 + n + m\n"
        "t = 0\n"
        "for i = 1, n do\n"
        "  local kind, r, at, lock, key, token = string.sub(kinds, i, i)\n"
        "  if kind ~= 'a' then\n"
        "    t = t + 1\n"
        "    at, lock, key, token = a, KEYS[3 + t], KEYS[3 + m + t],"
        " ARGV[6 + n + t]\n"
        "    if kind == 'o' then a = a + 1\n"
        "    elseif kind == 'r' then a = a + 7\n"
        "    else a = a + 6 end\n"
        "  end\n"
        "  if not owned[i] then\n"
        "    codes[i] = 's'\n"
        "  else\n"
        "    if kind == 'o' then\n"
        "      redis.call('SET', key, ARGV[at], 'PX', ARGV[3])\n"
        "    elseif kind ~= 'a' then\n"
        "      if not now then\n"
        "        local time = redis.call('TIME')\n"
        "        now = tonumber(time[1]) * 1000 +"
        " math.floor(tonumber(time[2]) / 1000)\n"
        "      end\n"
        "      redis.call('DEL', key)\n"
        "      r = redis.pcall('HSET', key, 'id', ARGV[at], 'type', ARGV[5],"
        " 'payload', ARGV[at + 1], 'attempt', ARGV[at + 2], 'enqueued_at',"
        " ARGV[at + 3], 'trace', ARGV[at + 4], 'error', ARGV[at + 5],"
        " 'worker', consumer, 'failed_at', now)\n"
        "      if kind == 'r' and not failed(r) then\n"
        "        r = redis.pcall('ZADD', KEYS[2],"
        " now + tonumber(ARGV[at + 6]), ARGV[at])\n"
        "      elseif not failed(r) then\n"
        "        redis.call('PEXPIRE', key, dead_ttl)\n"
        "        r = redis.pcall('ZADD', KEYS[3], now, ARGV[at])\n"
        "        died = died or not failed(r)\n"
        "      end\n"
        "    end\n"
        "    if failed(r) then\n"
        "      codes[i], out[#out + 1] = 'e', r.err\n"
        "    else\n"
        "      codes[i], acks[#acks + 1] = 'k', ARGV[6 + i]\n"
        "      if kind ~= 'a' and token ~= '' then\n"
        "        releases[#releases + 1] = lock\n"
        "      end\n"
        "    end\n"
        "  end\n"
        "end\n"
        "if died then\n"
        "  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf',"
        " '(' .. (now - dead_ttl))\n"
        "end\n"
        "if #acks > 0 then\n"
        "  redis.call('XACK', KEYS[1], group, unpack(acks))\n"
        "  redis.call('XDEL', KEYS[1], unpack(acks))\n"
        "end\n"
        "if #releases > 0 then redis.call('DEL', unpack(releases)) end\n"
        "out[1] = table.concat(codes)\n"
        "return out\n"};

/* release: KEYS lock; ARGV token. Deletes the lock only if it still holds
 * this run's token (a batch dropped by a broken connection). */
script script_release = {
    .name = "release",
    .source = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
              "  return redis.call('DEL', KEYS[1])\n"
              "end\n"
              "return 0\n"};

/* renew: KEYS stream, lock...; ARGV group, consumer, lock_ttl_ms, then
 * the entry ids, then the tokens ("" for no lock), one per lock key. For a
 * live worker's running batch: each entry still pending under its
 * consumer gets its idle time reset (XCLAIM JUSTID: no delivery counted),
 * so no other host takes it over, and each lock still holding its token
 * lives lock_ttl longer. Returns the number of entries renewed. */
script script_renew = {
    .name = "renew",
    .source =
        "local n = #KEYS - 1\n"
        "local renewed = 0\n"
        "for i = 1, n do\n"
        "  local entry = ARGV[3 + i]\n"
        "  local token = ARGV[3 + n + i]\n"
        "  local p = redis.call('XPENDING', KEYS[1], ARGV[1], entry, entry,"
        " 1, ARGV[2])\n"
        "  if #p > 0 then\n"
        "    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, entry,"
        " 'JUSTID')\n"
        "    renewed = renewed + 1\n"
        "  end\n"
        "  if token ~= '' and redis.call('GET', KEYS[1 + i]) == token then\n"
        "    redis.call('PEXPIRE', KEYS[1 + i], ARGV[3])\n"
        "  end\n"
        "end\n"
        "return renewed\n"};

/* heartbeat: KEYS instance key; ARGV value, ttl_ms. Takes the key if it is
 * free or already ours and (re)sets its TTL: 1; 0 if another live host
 * holds it. */
script script_heartbeat = {
    .name = "heartbeat",
    .source =
        "local v = redis.call('GET', KEYS[1])\n"
        "if v and v ~= ARGV[1] then return 0 end\n"
        "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
        "return 1\n"};

/* due: KEYS delayed; ARGV limit. The ids whose time has come, by Redis
 * TIME. Read-only; script_promote moves them. */
script script_due = {
    .name = "due",
    .source =
        "local t = redis.call('TIME')\n"
        "local now = tonumber(t[1]) * 1000 +"
        " math.floor(tonumber(t[2]) / 1000)\n"
        "return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now,"
        " 'LIMIT', 0, tonumber(ARGV[1]))\n"};

/* promote: KEYS delayed, stream, task:<id>...; ARGV id... (same order).
 * Moves each id still due from the delayed set into the stream with the
 * fields of its envelope (error, failed_at and worker stay behind). An id
 * with no envelope is dropped from the delayed set. Returns the number
 * moved. */
script script_promote = {
    .name = "promote",
    .source =
        "local t = redis.call('TIME')\n"
        "local now = tonumber(t[1]) * 1000 +"
        " math.floor(tonumber(t[2]) / 1000)\n"
        "local moved = 0\n"
        "for i, id in ipairs(ARGV) do\n"
        "  local score = redis.call('ZSCORE', KEYS[1], id)\n"
        "  if score and tonumber(score) <= now then\n"
        "    local h = redis.call('HGETALL', KEYS[2 + i])\n"
        "    if #h > 0 then\n"
        "      local fields = {}\n"
        "      for j = 1, #h, 2 do\n"
        "        local k = h[j]\n"
        "        if k ~= 'error' and k ~= 'failed_at' and k ~= 'worker' then\n"
        "          fields[#fields + 1] = k\n"
        "          fields[#fields + 1] = h[j + 1]\n"
        "        end\n"
        "      end\n"
        "      redis.call('XADD', KEYS[2], '*', unpack(fields))\n"
        "      moved = moved + 1\n"
        "    end\n"
        "    redis.call('DEL', KEYS[2 + i])\n"
        "    redis.call('ZREM', KEYS[1], id)\n"
        "  end\n"
        "end\n"
        "return moved\n"};

/* trim_dead: KEYS dead, task:<id>...; ARGV dead_max, id... (the oldest
 * ids, as read before the call). Removes them while the set is over
 * dead_max, with their envelopes. Returns the number removed. */
script script_trim_dead = {
    .name = "trim_dead",
    .source =
        "local max = tonumber(ARGV[1])\n"
        "local removed = 0\n"
        "for i = 2, #ARGV do\n"
        "  if redis.call('ZCARD', KEYS[1]) <= max then break end\n"
        "  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then\n"
        "    redis.call('DEL', KEYS[i])\n"
        "    removed = removed + 1\n"
        "  end\n"
        "end\n"
        "return removed\n"};

script *const scripts_all[] = {
    &script_begin,     &script_finish, &script_release,
    &script_renew,     &script_heartbeat, &script_due,
    &script_promote,   &script_trim_dead, NULL};

void scripts_init(void)
{
    for (size_t i = 0; scripts_all[i]; i++)
        script_init(scripts_all[i]);
}
