#!/usr/bin/env bash
# A soak of the promise under faults (issue 17): SOAK_TASKS chaos tasks
# through one wharfd with SOAK_WORKERS workers on a private redis-server
# with appendfsync always, while a worker is killed with -9 every
# SOAK_KILL_EVERY seconds, the host reloads (SIGHUP) every
# SOAK_HUP_EVERY seconds, and Redis is killed with -9 once and restarted
# from its append-only file. Then it counts, from Redis and the chaos
# plugin's runs and done files:
#   lost           tasks with neither a result nor a dead record (must be 0)
#   ok twice       tasks whose plugin returned OK more than once (must be
#                  at most the worker deaths: the kills and the crashes)
#   run after done runs that began after the task's result was stored
#                  (must be 0: the begin script answers "cached" instead)
# Usage: BUILD=build bash bench/soak.sh   (make soak)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TASKS=${SOAK_TASKS:-20000}
WORKERS=${SOAK_WORKERS:-4}
CRASH_PERMILLE=${SOAK_CRASH_PERMILLE:-12}
KILL_EVERY=${SOAK_KILL_EVERY:-2}
HUP_EVERY=${SOAK_HUP_EVERY:-10}
LIMIT=${SOAK_LIMIT_S:-900}
TASK_MS=${SOAK_TASK_MS:-2}
WHARFD=$BUILD/wharfd
WHARF=$BUILD/wharf
PLUGINS=$(cd "$BUILD/plugins" && pwd)
for f in "$WHARFD" "$WHARF" "$PLUGINS/chaos.so"; do
    [ -e "$f" ] || { echo "soak: $f is missing; run make first" >&2; exit 69; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/wharf-soak.XXXXXX")
redis_pid="" wharfd_pid="" port=""
# shellcheck source=bench/stop_pid.sh
. bench/stop_pid.sh
cleanup() {
    [ -n "$wharfd_pid" ] && stop_pid "$wharfd_pid"
    [ -n "$redis_pid" ] && stop_pid "$redis_pid"
    return 0
}
trap cleanup EXIT
fail() { echo "soak: $*" >&2; exit 70; }
rcli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }

free_port() { "$BUILD/bench/wharf-bench" free-port; }
start_redis() {
    redis-server --port "$port" --bind 127.0.0.1 --dir "$WORK" \
        --appendonly yes --appendfsync always --save '' \
        --daemonize no >>"$WORK/redis.log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 1 500); do
        [ "$(rcli PING 2>/dev/null)" = PONG ] && return 0
        sleep 0.02
    done
    fail "redis-server did not start; see $WORK/redis.log"
}
port=$(free_port)
start_redis

cat >"$WORK/wharf.ini" <<EOF
[host]
plugins_dir = $PLUGINS
autoload = no
insecure_plugins = yes
workers = $WORKERS
instance = soak
shutdown_timeout = 10s
[redis]
url = redis://127.0.0.1:$port/0
[log]
level = info
[defaults]
prefetch = 16
max_attempts = 3
backoff_base = 10ms
backoff_max = 100ms
; the payloads repeat: each line is a task of its own
idempotency = none
[plugin.chaos]
path = chaos.so
types = chaos
runs_file = $WORK/runs
done_file = $WORK/done
EOF

# The payloads: CRASH_PERMILLE in a thousand crash their worker at every
# attempt (dead after max_attempts), 1% fail once, the rest take TASK_MS.
echo "soak: enqueueing $TASKS tasks" >&2
awk -v n="$TASKS" -v c="$CRASH_PERMILLE" -v ms="$TASK_MS" 'BEGIN {
    for (i = 0; i < n; i++)
        print (i % 1000 < c) ? "crash" : (i % 100 == 50) ? "fail:1" : "sleep:" ms
    }' >"$WORK/payloads"


"$WHARFD" --config "$WORK/wharf.ini" 2>"$WORK/wharfd.log" &
wharfd_pid=$!
# The host publishes the type's policy (idempotency = none) before the
# producer reads it: otherwise the repeated payloads are duplicates.
for _ in $(seq 1 500); do
    grep -q '"msg":"worker serving"' "$WORK/wharfd.log" && break
    sleep 0.02
done
"$WHARF" --config "$WORK/wharf.ini" enqueue chaos --file "$WORK/payloads" \
    >"$WORK/enqueue.ids" 2>"$WORK/enqueue.err" ||
    fail "enqueue failed: $(cat "$WORK/enqueue.err")"
[ "$(wc -l <"$WORK/enqueue.ids")" -eq "$TASKS" ] ||
    fail "enqueued $(wc -l <"$WORK/enqueue.ids") of $TASKS"
kills=0 hups=0 restarted=0 start=$SECONDS next_kill=$KILL_EVERY next_hup=$HUP_EVERY
workers_of() { pgrep -P "$wharfd_pid" -x wharfd || true; }
settled() { # every task has a result or a dead record
    local results dead
    results=$(rcli EVAL "return #redis.call('KEYS', 'wharf:{chaos}:result:*')" 0)
    dead=$(rcli ZCARD 'wharf:{chaos}:dead')
    [ $((results + dead)) -ge "$TASKS" ]
}
while ! settled 2>/dev/null; do
    elapsed=$((SECONDS - start))
    [ "$elapsed" -lt "$LIMIT" ] || fail "not settled after ${LIMIT}s; see $WORK"
    if [ "$elapsed" -ge "$next_kill" ]; then
        victim=$(workers_of | shuf -n 1)
        if [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null; then
            kills=$((kills + 1))
        fi
        next_kill=$((next_kill + KILL_EVERY))
    fi
    if [ "$elapsed" -ge "$next_hup" ]; then
        kill -HUP "$wharfd_pid" && hups=$((hups + 1))
        next_hup=$((next_hup + HUP_EVERY))
    fi
    if [ "$restarted" -eq 0 ] && [ "$elapsed" -ge 7 ]; then
        echo "soak: killing redis-server and restarting it from its AOF" >&2
        kill -9 "$redis_pid"
        wait "$redis_pid" 2>/dev/null || true
        start_redis
        restarted=1
    fi
    sleep 0.2
done
took=$((SECONDS - start))
stop_pid "$wharfd_pid"
wharfd_pid=""

# Counts.
rcli --raw EVAL "local out = {}
for _, k in ipairs(redis.call('KEYS', 'wharf:{chaos}:result:*')) do
  out[#out + 1] = string.sub(k, #'wharf:{chaos}:result:' + 1) end
return out" 0 | sort >"$WORK/ok.ids"
rcli --raw ZRANGE 'wharf:{chaos}:dead' 0 -1 | sort >"$WORK/dead.ids"
# A lost task: one that was enqueued and has neither a result nor a dead
# record.
sort -u "$WORK/ok.ids" "$WORK/dead.ids" >"$WORK/settled.ids"
lost=$(sort "$WORK/enqueue.ids" | comm -23 - "$WORK/settled.ids" | wc -l)
ok_twice=$(sort "$WORK/done" | uniq -d | wc -l)
crash_deaths=$(grep -c '"msg":"worker died; restarting".*SIGSEGV' "$WORK/wharfd.log" || true)
deaths=$(grep -c '"msg":"worker died; restarting"' "$WORK/wharfd.log" || true)
cached=$(grep -c '"outcome":"cached"' "$WORK/wharfd.log" || true)
lease_lost=$(grep -c '"msg":"lease lost"' "$WORK/wharfd.log" || true)
# A run that began after its task's result was stored would have found
# the result at begin and been answered "cached" without a run: each
# cached outcome is counted, and a run after a result would show as a
# start logged after an ok finish of the same id.
run_after_done=$(awk '
    /"msg":"task finished"/ && /"outcome":"ok"/ {
        match($0, /"task":"[^"]*"/); id = substr($0, RSTART + 8, RLENGTH - 9)
        done[id] = 1 }
    /"msg":"task started"/ {
        match($0, /"task":"[^"]*"/); id = substr($0, RSTART + 8, RLENGTH - 9)
        if (id in done) n++ }
    END { print n + 0 }' "$WORK/wharfd.log")
cat <<EOF

wharf soak: $TASKS tasks, $WORKERS workers, $took s
  enqueued                 $(wc -l <"$WORK/enqueue.ids")
  ok / dead                $(wc -l <"$WORK/ok.ids") / $(wc -l <"$WORK/dead.ids")
  lost                     $lost
  workers killed (-9)      $kills
  worker deaths in all     $deaths (crashing tasks: $crash_deaths)
  reloads (SIGHUP)         $hups
  redis restarts           $restarted (appendfsync always)
  returned OK twice        $ok_twice   (at most the worker deaths: $deaths)
  ran after it finished    $run_after_done
  answered cached          $cached
  leases lost              $lease_lost
  files                    $WORK
EOF
[ "$lost" -eq 0 ] || fail "$lost tasks lost"
[ "$ok_twice" -le "$deaths" ] || fail "$ok_twice tasks returned OK twice"
[ "$run_after_done" -eq 0 ] || fail "$run_after_done runs after a finish"
