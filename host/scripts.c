/* The host's Lua scripts. Each moves a task from one place to another in
 * one atomic step, so no crash between two commands can leave a task
 * half-moved. Every key a script touches comes in KEYS (Redis Cluster
 * safe: all of them carry the type's hash tag). Times come from Redis TIME,
 * so hosts with skewed clocks agree on due times. */
#include "scripts.h"

/* Shared head of the finish scripts: the run still owns the task only if
 * its entry is pending under this consumer and, when it took the lock, the
 * lock still holds its token. A run that no longer owns it writes nothing
 * and answers "stale". ARGV[1] group, ARGV[2] consumer, ARGV[3] entry id,
 * ARGV[4] token ("" when the run holds no lock); KEYS[1] stream, KEYS[2]
 * lock. */
#define OWNED_CHECK                                                           \
    "local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3],"   \
    " 1, ARGV[2])\n"                                                          \
    "if #p == 0 then return 'stale' end\n"                                    \
    "if ARGV[4] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[4] then\n"       \
    "  return 'stale'\n"                                                      \
    "end\n"                                                                   \
    "local t = redis.call('TIME')\n"                                          \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

/* Writes the envelope hash KEYS[3] from ARGV[5..]: id, type, payload,
 * attempt, enqueued_at, trace, error, worker; failed_at is now. */
#define WRITE_ENVELOPE                                                        \
    "redis.call('DEL', KEYS[3])\n"                                            \
    "redis.call('HSET', KEYS[3], 'id', ARGV[5], 'type', ARGV[6],"             \
    " 'payload', ARGV[7], 'attempt', ARGV[8], 'enqueued_at', ARGV[9],"        \
    " 'trace', ARGV[10], 'error', ARGV[11], 'worker', ARGV[12],"              \
    " 'failed_at', now)\n"

#define ACK_ENTRY                                                             \
    "redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])\n"                         \
    "redis.call('XDEL', KEYS[1], ARGV[3])\n"

/* begin: KEYS result, lock, fence; ARGV lock_ttl_ms.
 * {0} cached; {1, token} lock taken; {2, pttl} held by another run. */
script script_begin = {
    .name = "begin",
    .source =
        "if redis.call('EXISTS', KEYS[1]) == 1 then return {0} end\n"
        "local token = redis.call('INCR', KEYS[3])\n"
        "if redis.call('SET', KEYS[2], token, 'NX', 'PX', ARGV[1]) then\n"
        "  return {1, token}\n"
        "end\n"
        "return {2, redis.call('PTTL', KEYS[2])}\n"};

/* finish_ok: KEYS stream, lock, result; ARGV group, consumer, entry,
 * token, result, result_ttl_ms. Stores the result (an empty one too),
 * acks and deletes the entry, releases the lock. */
script script_finish_ok = {
    .name = "finish_ok",
    .source = OWNED_CHECK
        "redis.call('SET', KEYS[3], ARGV[5], 'PX', ARGV[6])\n" ACK_ENTRY
        "if ARGV[4] ~= '' then redis.call('DEL', KEYS[2]) end\n"
        "return 'ok'\n"};

/* finish_retry: KEYS stream, lock, task, delayed; ARGV group, consumer,
 * entry, token, then the envelope (id, type, payload, attempt of the next
 * run, enqueued_at, trace, error, worker), then delay_ms. Moves the task
 * to the delayed set, due at now + delay. */
script script_finish_retry = {
    .name = "finish_retry",
    .source = OWNED_CHECK ACK_ENTRY WRITE_ENVELOPE
        "redis.call('ZADD', KEYS[4], now + tonumber(ARGV[13]), ARGV[5])\n"
        "if ARGV[4] ~= '' then redis.call('DEL', KEYS[2]) end\n"
        "return 'retry'\n"};

/* finish_dead: KEYS stream, lock, task, dead; ARGV group, consumer, entry,
 * token, the envelope as for finish_retry, then dead_ttl_ms. Moves the
 * task to the dead set; its envelope expires with dead_ttl, and ids older
 * than dead_ttl leave the set (dead_max is kept by script_trim_dead). */
script script_finish_dead = {
    .name = "finish_dead",
    .source = OWNED_CHECK ACK_ENTRY WRITE_ENVELOPE
        "local ttl = tonumber(ARGV[13])\n"
        "redis.call('PEXPIRE', KEYS[3], ttl)\n"
        "redis.call('ZADD', KEYS[4], now, ARGV[5])\n"
        "redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. (now - ttl))\n"
        "if ARGV[4] ~= '' then redis.call('DEL', KEYS[2]) end\n"
        "return 'dead'\n"};

/* ack: KEYS stream; ARGV group, consumer, entry. For a task whose result
 * is cached, or an entry deleted under us: acks and deletes it. */
script script_ack = {
    .name = "ack",
    .source =
        "local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3],"
        " 1, ARGV[2])\n"
        "if #p == 0 then return 'stale' end\n"
        "redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])\n"
        "redis.call('XDEL', KEYS[1], ARGV[3])\n"
        "return 'ok'\n"};

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
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
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
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
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

script *const scripts_all[] = {&script_begin,      &script_finish_ok,
                               &script_finish_retry, &script_finish_dead,
                               &script_ack,          &script_release,
                               &script_renew,        &script_heartbeat,
                               &script_due,
                               &script_promote,      &script_trim_dead,
                               NULL};

void scripts_init(void)
{
    for (size_t i = 0; scripts_all[i]; i++)
        script_init(scripts_all[i]);
}
