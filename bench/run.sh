#!/usr/bin/env bash
# make bench: wharf against a private redis-server, in one run on one
# machine (docs/tuning.md). Prints a table and writes a JSON file:
#   1. enqueue rate through libwharf-client, one task a call and in bulk;
#   2. processing throughput of BENCH_TASKS pre-enqueued no-op tasks with
#      wharfd (BENCH_WORKERS workers, prefetch BENCH_PREFETCH), from the
#      first claim to the last result (wharf-bench watch polls Redis);
#   3. Redis commands per task (INFO commandstats, script-internal ones
#      included) and round trips per task (wharfd's own counter, read
#      from /metrics at the end of the run: workers and supervisor);
#   4. enqueue-to-start latency at a steady BENCH_RATE tasks/s;
#   5. peak resident memory (VmHWM) of the supervisor and each worker;
#   6. the ceiling: redis-benchmark on the same server;
#   7. bulk enqueue from the C, Python and Node clients in turn, with the
#      Redis commands each costs per task (they run the same script the
#      same way, so the figures must be equal).
#   8. the cluster rows (bench/cluster.sh): one node against a 3-primary
#      Redis Cluster, and the cost of min_replicas_ack = 1;
#   9. poison tasks: BENCH_CRASH_TASKS tasks that each take 1 ms (as a task
#      that waits on I/O does), run crash-free and again with 1% of them
#      killing their worker (max_attempts 1: they go dead), the two rates
#      side by side; and the no-op run again with 1% crashing, where the
#      cost of a restart (a fork, the plugins' load, a connect: a few ms)
#      is all there is to see.
#  10. tasks that wait on I/O: BENCH_IO_TASKS tasks that each sleep
#      BENCH_IO_MS (50 ms, as an HTTP call does), BENCH_IO_WORKERS worker
#      processes (64) of one task each: the rate as a share of what that
#      many in flight allow, the Redis CPU, and the memory (PSS) of the
#      whole host, supervisor and workers; then the same tasks with
#      BENCH_IO_THREADED_WORKERS (2) workers of BENCH_IO_THREADS (128)
#      threads each, in the same run (goals: 0.9 of the limit, 30 us of
#      Redis CPU and no more Redis commands per task than the no-op row,
#      40 MiB for the whole host).
#  11. handlers in other languages: BENCH_HANDLER_TASKS no-op tasks through
#      coprocess.so and a no-op Python handler (bench/noop_handler.py,
#      one task at a time per worker), then a no-op Node one
#      (bench/noop_handler.js) with threads = inflight = prefetch =
#      BENCH_HANDLER_THREADS (32) in each worker, BENCH_WORKERS workers,
#      beside the C no-op's rate of step 2; and BENCH_IO_TASKS tasks of
#      BENCH_IO_MS through one wharfd worker whose threads keep
#      BENCH_IO_WORKERS in flight in one async Python program
#      (bench/io_handler.py, threads = inflight = BENCH_IO_WORKERS), as a
#      share of what that many in flight allow.
#  12. the processing run again with wharfd over TLS (rediss://, the same
#      server's --tls-port, certificates made here with openssl), its rate
#      beside the plain one's (target: at least 0.7 of it).
#  13. the dead set search: BENCH_DEAD_RECORDS dead records, half of them
#      matching, searched by error text with wharf dead list --count (a
#      page of 200 records a call in Redis): how long (target: under a
#      second) and the longest command Redis ran meanwhile.
#  14. priorities: a backlog of BENCH_PRIORITY_BULK (100,000) bulk tasks of
#      BENCH_PRIORITY_TASK_US (1 ms) each and an urgent type at
#      BENCH_PRIORITY_RATE (100) tasks/s for BENCH_STEADY_SECONDS, served
#      by the same BENCH_WORKERS workers: the urgent type's
#      enqueue-to-start p50/p99 with [host] order = strict and a higher
#      priority, beside the bulk type's task time x prefetch (the bound
#      the issue sets) and beside the same run without priorities. The
#      backlog outlasts the run (it is not drained), so the row costs two
#      runs of BENCH_STEADY_SECONDS and two bulk enqueues.
#  15. rates: BENCH_RATE_TASKS (20,000) no-op tasks of a type with
#      rate_limit = BENCH_RATE_LIMIT/s (5,000) and rate_burst = the
#      prefetch, BENCH_WORKERS workers: the rate achieved as a share of
#      the limit (it may not pass 1 by more than the burst allows), and
#      the Redis commands and CPU per task of a type whose tasks wait for
#      their turn.
# Only processes it started are stopped, and always. Needs bash, awk and
# the redis-server/redis-cli/redis-benchmark of scripts/bootstrap.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TASKS=${BENCH_TASKS:-100000}
WORKERS=${BENCH_WORKERS:-2}
PREFETCH=${BENCH_PREFETCH:-16}
SINGLE=${BENCH_SINGLE:-20000}
RATE=${BENCH_RATE:-1000}
STEADY_SECONDS=${BENCH_STEADY_SECONDS:-5}
PHASES=${BENCH_PHASES:-ceiling,enqueue,clients,process,tls,crash,io,handlers,dead,latency,priority,rate,workflows,cluster}
# rates (step 15)
RATE_LIMIT=${BENCH_RATE_LIMIT:-5000}
RATE_TASKS=${BENCH_RATE_TASKS:-20000}
# Dead records searched in the dead-set row.
DEAD_RECORDS=${BENCH_DEAD_RECORDS:-100000}
# Tasks in a thousand that crash their worker in the poison row.
CRASH_PERMILLE=${BENCH_CRASH_PERMILLE:-10}
CRASH_TASKS=${BENCH_CRASH_TASKS:-20000}
CLIENT_TASKS=${BENCH_CLIENT_TASKS:-50000}
IO_TASKS=${BENCH_IO_TASKS:-8000}
IO_MS=${BENCH_IO_MS:-50}
IO_WORKERS=${BENCH_IO_WORKERS:-64}
IO_THREADED_WORKERS=${BENCH_IO_THREADED_WORKERS:-2}
IO_THREADS=${BENCH_IO_THREADS:-128}
HANDLER_TASKS=${BENCH_HANDLER_TASKS:-30000}
HANDLER_THREADS=${BENCH_HANDLER_THREADS:-32}
PRIORITY_BULK=${BENCH_PRIORITY_BULK:-100000}
PRIORITY_RATE=${BENCH_PRIORITY_RATE:-100}
PRIORITY_TASK_US=${BENCH_PRIORITY_TASK_US:-1000}
# Another wharfd (say, last release's) to run the processing phase with
# too, against the same server: its rate is shown beside ours.
BASELINE=${BENCH_BASELINE_WHARFD:-}
OUT=${BENCH_OUT:-$BUILD/bench/results.json}
# More keys for the noop plugin's manifest section, e.g. "sleep_us = 1000"
# for tasks that take a millisecond (bench/sweep.sh).
PLUGIN_KEYS=${BENCH_PLUGIN_KEYS:-}

TOOL=$BUILD/bench/wharf-bench
WHARFD=$BUILD/wharfd
STREAM='wharf:{noop}:stream'
for f in "$TOOL" "$WHARFD" "$BUILD/bench/noop.so"; do
    [ -e "$f" ] || { echo "bench: $f is missing; run make first" >&2; exit 69; }
done
for t in redis-server redis-cli redis-benchmark awk; do
    command -v "$t" >/dev/null ||
        { echo "bench: $t is missing; run make bootstrap" >&2; exit 69; }
done
has_phase() { case ",$PHASES," in *",$1,"*) return 0 ;; esac; return 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/wharf-bench.XXXXXX")
PLUGINS=$(cd "$BUILD/bench" && pwd)
redis_pid="" wharfd_pid="" watch_pid="" port="" tls_port=""

# shellcheck source=bench/stop_pid.sh
. bench/stop_pid.sh
cleanup() {
    local status=$?
    stop_pid "$watch_pid"
    stop_pid "$wharfd_pid"
    stop_pid "$redis_pid"
    if [ "$status" = 0 ]; then
        rm -rf "$WORK"
    else
        echo "bench: logs kept in $WORK" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    echo "bench: $*" >&2
    exit 1
}
rcli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
# "key value" lines of a helper's output: value_of FILE KEY
value_of() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }
# A CA and a server certificate for 127.0.0.1, for the TLS row.
make_certificates() {
    mkdir -p "$WORK/tls"
    (
        cd "$WORK/tls"
        k='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
        # shellcheck disable=SC2086 # $k is several options
        openssl req -x509 $k -keyout ca.key -out ca.crt -days 2 \
            -subj /CN=wharf-bench-ca
        # shellcheck disable=SC2086
        openssl req $k -keyout server.key -out server.csr -subj /CN=127.0.0.1
        printf 'subjectAltName=IP:127.0.0.1\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key \
            -CAcreateserial -out server.crt -days 2 -extfile server.ext
    ) 2>"$WORK/openssl.log" || fail "openssl failed; see $WORK/openssl.log"
}
# Our server answers as the process we started, never another one. With
# the tls phase it listens on a TLS port too, beside the plain one.
start_redis() {
    local tls_args=()
    if has_phase tls; then
        command -v openssl >/dev/null || fail "openssl is missing"
        make_certificates
    fi
    for _ in 1 2 3 4 5; do
        port=$("$TOOL" free-port)
        if has_phase tls; then
            tls_port=$("$TOOL" free-port)
            tls_args=(--tls-port "$tls_port"
                      --tls-cert-file "$WORK/tls/server.crt"
                      --tls-key-file "$WORK/tls/server.key"
                      --tls-ca-cert-file "$WORK/tls/ca.crt"
                      --tls-auth-clients no)
        fi
        redis-server --port "$port" --bind 127.0.0.1 --save '' \
            --appendonly no --dir "$WORK" --logfile "$WORK/redis.log" \
            "${tls_args[@]}" --daemonize no &
        redis_pid=$!
        for _ in $(seq 1 250); do
            [ "$(rcli INFO server 2>/dev/null |
                awk -F: '/^process_id:/ { print $2 + 0 }')" = "$redis_pid" ] &&
                return 0
            kill -0 "$redis_pid" 2>/dev/null || break
            sleep 0.02
        done
        stop_pid "$redis_pid"
        redis_pid=""
    done
    fail "could not start redis-server; see $WORK/redis.log"
}

# ---- 6. the ceiling: redis-benchmark on the same server ----
# The machine's speed drifts (a shared host), so the non-pipelined SET
# rate that wharf is compared with is taken right before and right after
# the processing run, and the ratio uses their mean.
bench_rps() { # bench_rps ARGS...: requests per second of one test
    redis-benchmark -h 127.0.0.1 -p "$port" -q --csv "$@" 2>/dev/null |
        awk -F'"' 'NR == 2 { printf "%.0f\n", $4 }'
}
set_rps=0 set_before=0 set_after=0 set_p16_rps=0 evalsha_rps=0
set_rate() { bench_rps -t set -n 200000; }
ceiling() {
    echo "bench: redis-benchmark (SET -P 16, EVALSHA, SET)" >&2
    set_p16_rps=$(bench_rps -t set -n 1000000 -P 16)
    local sha
    sha=$(rcli SCRIPT LOAD "return 1")
    evalsha_rps=$(bench_rps -n 200000 EVALSHA "$sha" 0)
    has_phase process || set_before=$(set_rate)
    rcli FLUSHALL >/dev/null
}

# ---- 1. enqueue rate ----
single_rate=0 single_redis_us=0
enqueue() {
    echo "bench: enqueue, $SINGLE one at a time" >&2
    "$TOOL" enqueue "$port" bench.single "$SINGLE" single >"$WORK/single.txt" ||
        fail "single enqueue failed"
    single_rate=$(value_of "$WORK/single.txt" rate)
    single_redis_us=$(value_of "$WORK/single.txt" redis_cpu_us_per_task)
    rcli FLUSHALL >/dev/null
}

# ---- 7. bulk enqueue from each client ----
# Redis commands since CONFIG RESETSTAT, script-internal ones included,
# less the bench's own (CONFIG, INFO).
commands_since_reset() {
    rcli INFO commandstats | tr -d '\r' | awk -F'[:=,]' '
        /^cmdstat_/ && $1 != "cmdstat_config" && $1 != "cmdstat_info" {
            s += $3 } END { print s + 0 }'
}
c_client_rate=0 py_client_rate=0 node_client_rate=0
c_client_cmds=0 py_client_cmds=0 node_client_cmds=0
client_bulk() { # client_bulk NAME COMMAND...: sets NAME_client_rate, _cmds
    local name=$1
    shift
    rcli FLUSHALL >/dev/null
    rcli CONFIG RESETSTAT >/dev/null
    "$@" >"$WORK/client-$name.txt" || fail "$name bulk enqueue failed"
    printf -v "${name}_client_rate" %s "$(value_of "$WORK/client-$name.txt" rate)"
    printf -v "${name}_client_cmds" %s "$(awk -v c="$(commands_since_reset)" \
        -v n="$CLIENT_TASKS" 'BEGIN { printf "%.3f", c / n }')"
}
clients() {
    echo "bench: bulk enqueue of $CLIENT_TASKS from C, Python and Node" >&2
    client_bulk c "$TOOL" enqueue "$port" bench.c "$CLIENT_TASKS" bulk
    client_bulk py /usr/bin/python3 bench/enqueue.py "$port" bench.py \
        "$CLIENT_TASKS"
    client_bulk node node bench/enqueue.js "$port" bench.node "$CLIENT_TASKS"
    rcli FLUSHALL >/dev/null
}

# ---- 2, 3, 5: processing ----
manifest() { # manifest FILE WORKERS METRICS_PORT [EXTRA PLUGIN KEYS] [PREFETCH]
    cat >"$1" <<EOF
[host]
plugins_dir = $PLUGINS
autoload = no
; the build folder may be group-writable (umask 002): not a bench concern
insecure_plugins = yes
workers = $2
shutdown_timeout = 5s
instance = bench
${HOST_KEYS:-}
[redis]
url = ${BENCH_REDIS_URL:-redis://127.0.0.1:$port/0}
${BENCH_REDIS_KEYS:-}
[metrics]
listen = ${3:-off}
[log]
level = warn
format = json
[defaults]
prefetch = ${5:-$PREFETCH}
[plugin.noop]
${NOOP_SECTION:-path = noop.so}
types = ${NOOP_TYPES:-noop}
$PLUGIN_KEYS
${4:-}
EOF
}
# The pids of the children of a process, from /proc (no procps needed).
proc_children() { # proc_children PID
    local parent=$1 d stat rest
    for d in /proc/[0-9]*; do
        stat=$(cat "$d/stat" 2>/dev/null) || continue
        rest=${stat##*) }
        # shellcheck disable=SC2086 # split the fields on purpose
        set -- $rest
        [ "$2" = "$parent" ] && echo "${d#/proc/}"
    done
    return 0
}
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# Proportional set size: shared pages split among those that share them,
# so the sum over processes is the host's real memory.
pss_kib() { awk '/^Pss:/ { print $2; exit }' "/proc/$1/smaps_rollup"; }
cpu_ticks() { # utime + stime
    local stat rest
    stat=$(cat "/proc/$1/stat")
    rest=${stat##*) }
    # shellcheck disable=SC2086
    set -- $rest
    echo $(( ${12} + ${13} ))
}
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

# process NAME WHARFD [EXTRA] [TASKS] [WORKERS] [PREFETCH]: one processing
# run; writes $WORK/NAME.* files. EXTRA goes into the manifest after the
# noop plugin's section.
process() {
    local name=$1 bin=$2 extra=${3:-} tasks=${4:-$TASKS} mport ini log
    local workers=${5:-$WORKERS} prefetch=${6:-$PREFETCH}
    ini=$WORK/$name.ini log=$WORK/$name.log
    rcli FLUSHALL >/dev/null
    echo "bench: $name: enqueueing $tasks tasks in bulk" >&2
    "$TOOL" enqueue "$port" noop "$tasks" bulk >"$WORK/$name.bulk" ||
        fail "bulk enqueue failed"
    if [ "$name" = wharf ] && has_phase ceiling; then
        echo "bench: redis-benchmark SET, before processing" >&2
        set_before=$(set_rate)
    fi
    mport=$("$TOOL" free-port)
    manifest "$ini" "$workers" "127.0.0.1:$mport" "$extra" "$prefetch"
    rm -f "$WORK/ready"
    "$TOOL" watch "$port" "$STREAM" "$tasks" "$WORK/ready" 120 \
        >"$WORK/$name.watch" &
    watch_pid=$!
    while [ ! -e "$WORK/ready" ]; do
        kill -0 "$watch_pid" 2>/dev/null || fail "the watcher did not start"
        sleep 0.01
    done
    echo "bench: $name: wharfd, $workers workers, prefetch $prefetch" >&2
    "$bin" --config "$ini" 2>"$log" &
    wharfd_pid=$!
    if ! wait "$watch_pid"; then
        watch_pid=""
        tail -n 5 "$log" >&2
        fail "$name: the run did not finish; see above"
    fi
    watch_pid=""
    "$TOOL" scrape "$mport" wharf_round_trips_total >"$WORK/$name.trips" \
        2>/dev/null || echo "" >"$WORK/$name.trips"
    {
        echo "supervisor $(hwm_kib "$wharfd_pid") $(cpu_ticks "$wharfd_pid")" \
            "$(pss_kib "$wharfd_pid")"
        for c in $(proc_children "$wharfd_pid"); do
            echo "worker $(hwm_kib "$c") $(cpu_ticks "$c") $(pss_kib "$c")"
        done
    } >"$WORK/$name.procs"
    stop_pid "$wharfd_pid"
    wharfd_pid=""
    if [ "$name" = wharf ] && has_phase ceiling; then
        echo "bench: redis-benchmark SET, after processing" >&2
        set_after=$(set_rate)
    fi
}

# ---- 4. latency at a steady rate ----
latency() {
    local ini=$WORK/latency.ini expected=$((RATE * STEADY_SECONDS))
    rcli FLUSHALL >/dev/null
    : >"$WORK/latency.txt"
    manifest "$ini" "$WORKERS" off "latency_file = $WORK/latency.txt"
    "$WHARFD" --config "$ini" 2>"$WORK/latency.log" &
    wharfd_pid=$!
    for _ in $(seq 1 250); do
        [ "$(rcli EXISTS "$STREAM")" = 1 ] && break
        sleep 0.02
    done
    sleep 0.2 # every worker is in its blocking claim
    echo "bench: latency: $RATE tasks/s for $STEADY_SECONDS s" >&2
    "$TOOL" steady "$port" noop "$RATE" "$STEADY_SECONDS" >"$WORK/steady.txt" ||
        fail "steady producer failed"
    for _ in $(seq 1 500); do
        [ "$(wc -l <"$WORK/latency.txt")" -ge "$expected" ] && break
        sleep 0.02
    done
    stop_pid "$wharfd_pid"
    wharfd_pid=""
    "$TOOL" percentiles "$WORK/latency.txt" >"$WORK/latency.pct" ||
        fail "no latency samples; see $WORK/latency.log"
}

# ---- 14. priorities ----
# One run: the bulk backlog, wharfd on it (noop serving noop and urgent,
# each 1 ms), then the steady producer of urgent tasks; the latency file
# has the urgent ones only (a bulk payload is not a send time). $1 names
# the run, $2 the [host] keys, $3 more manifest sections.
priority_run() {
    local name=$1 ini=$WORK/$1.ini expected=$((PRIORITY_RATE * STEADY_SECONDS))
    rcli FLUSHALL >/dev/null
    echo "bench: $name: enqueueing $PRIORITY_BULK bulk tasks" >&2
    "$TOOL" enqueue "$port" noop "$PRIORITY_BULK" bulk >"$WORK/$name.bulk" ||
        fail "bulk enqueue failed"
    : >"$WORK/$name.txt"
    HOST_KEYS=$2 NOOP_TYPES="noop, urgent" manifest "$ini" "$WORKERS" off \
        "sleep_us = $PRIORITY_TASK_US
latency_file = $WORK/$name.txt
$3"
    "$WHARFD" --config "$ini" 2>"$WORK/$name.log" &
    wharfd_pid=$!
    for _ in $(seq 1 250); do
        [ "$(rcli EXISTS 'wharf:{urgent}:stream')" = 1 ] && break
        sleep 0.02
    done
    echo "bench: $name: urgent tasks at $PRIORITY_RATE/s for" \
        "$STEADY_SECONDS s beside the backlog" >&2
    local from_ns from_len
    from_ns=$(date +%s%N) from_len=$(rcli XLEN "$STREAM")
    "$TOOL" steady "$port" urgent "$PRIORITY_RATE" "$STEADY_SECONDS" \
        >"$WORK/$name.steady" || fail "steady producer failed"
    for _ in $(seq 1 500); do
        [ "$(wc -l <"$WORK/$name.txt")" -ge "$expected" ] && break
        sleep 0.02
    done
    # A task's time in a worker, as it was: the window's time x workers
    # over the tasks run in it (bulk and urgent), the sleep and the host's
    # own cost per task together.
    awk -v ns="$(($(date +%s%N) - from_ns))" -v w="$WORKERS" \
        -v bulk="$((from_len - $(rcli XLEN "$STREAM")))" \
        -v urgent="$(wc -l <"$WORK/$name.txt")" \
        'BEGIN { printf "task_us %.0f\n", ns / 1000 * w / (bulk + urgent) }' \
        >"$WORK/$name.task"
    [ "$(rcli XLEN "$STREAM")" -gt 0 ] ||
        fail "$name: the bulk backlog ran out before the urgent tasks did"
    stop_pid "$wharfd_pid"
    wharfd_pid=""
    "$TOOL" percentiles "$WORK/$name.txt" >"$WORK/$name.pct" ||
        fail "no urgent latency samples; see $WORK/$name.log"
}
priority() {
    priority_run priority "order = strict" "[type.urgent]
priority = 10"
    priority_run priority_none "" ""
}

start_redis
has_phase ceiling && ceiling
has_phase enqueue && enqueue
has_phase clients && clients
if has_phase process; then
    process wharf "$WHARFD"
    [ -n "$BASELINE" ] && process baseline "$BASELINE"
fi
# The same run with wharfd over TLS; the producer and the watcher stay on
# the plain port, so only wharfd's own traffic differs.
if has_phase tls; then
    BENCH_REDIS_URL="rediss://127.0.0.1:$tls_port/0" \
        BENCH_REDIS_KEYS="tls_ca = $WORK/tls/ca.crt" process tls "$WHARFD"
fi
# The tasks that crash die at once (max_attempts 1), so the run ends when
# the stream is empty, as the crash-free one does.
crash_dead=0 slow_crash_dead=0
if has_phase crash; then
    poison="crash_permille = $CRASH_PERMILLE
[type.noop]
max_attempts = 1"
    process slow "$WHARFD" "sleep_us = 1000" "$CRASH_TASKS"
    process slow_crash "$WHARFD" "sleep_us = 1000
$poison" "$CRASH_TASKS"
    slow_crash_dead=$(rcli ZCARD 'wharf:{noop}:dead')
    process crash "$WHARFD" "$poison"
    crash_dead=$(rcli ZCARD 'wharf:{noop}:dead')
fi
if has_phase io; then
    process io "$WHARFD" "sleep_us = $((IO_MS * 1000))" "$IO_TASKS" \
        "$IO_WORKERS" 1
    process io_threads "$WHARFD" "sleep_us = $((IO_MS * 1000))
threads = $IO_THREADS" "$IO_TASKS" "$IO_THREADED_WORKERS"
fi
# The noop type served by a handler program through coprocess.so.
if has_phase handlers; then
    NOOP_SECTION="path = $PWD/$BUILD/plugins/coprocess.so
command = /usr/bin/python3 -m wharf.handler noop_handler
cwd = $PWD/bench
env = PYTHONPATH=$PWD/clients/python" \
        process handler_py "$WHARFD" "" "$HANDLER_TASKS"
    NOOP_SECTION="path = $PWD/$BUILD/plugins/coprocess.so
command = node $PWD/clients/node/handler.js $PWD/bench/noop_handler.js" \
        process handler_node "$WHARFD" "threads = $HANDLER_THREADS
inflight = $HANDLER_THREADS" "$HANDLER_TASKS" "$WORKERS" "$HANDLER_THREADS"
    # The I/O row through a real worker: one wharfd worker whose threads
    # keep IO_WORKERS tasks in flight in one async Python program.
    NOOP_SECTION="path = $PWD/$BUILD/plugins/coprocess.so
command = /usr/bin/python3 -m wharf.handler io_handler
cwd = $PWD/bench
env = PYTHONPATH=$PWD/clients/python IO_MS=$IO_MS" \
        process handler_io "$WHARFD" "threads = $IO_WORKERS
inflight = $IO_WORKERS" "$IO_TASKS" 1
fi
# rates: a type held to RATE_LIMIT/s, its burst one claim's worth.
if has_phase rate; then
    process rate "$WHARFD" "[type.noop]
rate_limit = $RATE_LIMIT/s
rate_burst = $PREFETCH" "$RATE_TASKS"
fi
# The dead set search: DEAD_RECORDS dead records as finish writes them,
# half of them dead of "connection refused", searched by error text with
# wharf dead list --count; how long it takes, and the longest command
# Redis ran meanwhile (its latency monitor, in ms).
dead_search() {
    local t0 t1
    rcli FLUSHALL >/dev/null
    echo "bench: dead: writing $DEAD_RECORDS dead records" >&2
    rcli EVAL "
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000
for i = 0, tonumber(ARGV[1]) - 1 do
  local id = 'd-' .. i
  local err = i % 2 == 0 and 'dial tcp: connection refused' or 'timeout'
  redis.call('HSET', 'wharf:{noop}:dead:' .. id, 'id', id, 'type', 'noop',
             'payload', 'p', 'attempt', 5, 'enqueued_at', now, 'trace',
             '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
             'error', err, 'worker', 'bench:0', 'failed_at', now - i)
  redis.call('ZADD', 'wharf:{noop}:dead', now - i, id)
end" 0 "$DEAD_RECORDS" >/dev/null
    rcli CONFIG SET latency-monitor-threshold 1 >/dev/null
    rcli LATENCY RESET >/dev/null
    echo "bench: dead: searching them by error text" >&2
    t0=$(date +%s%N)
    dead_matches=$(WHARF_REDIS_URL="redis://127.0.0.1:$port/0" \
        "$BUILD/wharf" dead list noop --grep 'connection refused' --count) ||
        fail "dead: wharf dead list failed"
    t1=$(date +%s%N)
    dead_search_ms=$(( (t1 - t0) / 1000000 ))
    # LATENCY LATEST: event, time, latest ms, most ms; nothing under 1 ms.
    dead_longest_ms=$(rcli LATENCY LATEST | awk '
        $1 == "command" { at = NR } at && NR == at + 3 { print; exit }')
    dead_longest_ms=${dead_longest_ms:-0}
    rcli CONFIG SET latency-monitor-threshold 0 >/dev/null
}
dead_matches=0 dead_search_ms=0 dead_longest_ms=0
has_phase dead && dead_search
has_phase latency && latency
has_phase priority && priority

# ---- workflows: a group of WORKFLOW_MEMBERS beside as many plain tasks ----
# The same no-op tasks twice, each run timed by the watcher (stream
# empty): plain, then as one group with a callback (wharf enqueue --group,
# enqueued before wharfd starts). What the group adds per member is the
# outbox entry, its drain and the count, all in Redis.
WORKFLOW_MEMBERS=${BENCH_WORKFLOW_MEMBERS:-10000}
workflow_run() { # workflow_run NAME: wharfd over what is enqueued now
    local name=$1 ini=$WORK/$1.ini
    manifest "$ini" "$WORKERS" off
    rm -f "$WORK/ready"
    "$TOOL" watch "$port" "$STREAM" "$WORKFLOW_MEMBERS" "$WORK/ready" 120 \
        >"$WORK/$name.watch" &
    watch_pid=$!
    while [ ! -e "$WORK/ready" ]; do
        kill -0 "$watch_pid" 2>/dev/null || fail "the watcher did not start"
        sleep 0.01
    done
    "$WHARFD" --config "$ini" 2>"$WORK/$name.log" &
    wharfd_pid=$!
    wait "$watch_pid" || { watch_pid=""; fail "$name: the run did not finish"; }
    watch_pid=""
    {
        for c in $(proc_children "$wharfd_pid"); do
            echo "worker $(cpu_ticks "$c")"
        done
        echo "supervisor $(cpu_ticks "$wharfd_pid")"
    } >"$WORK/$name.procs"
    stop_pid "$wharfd_pid"
    wharfd_pid=""
}
workflows() {
    echo "bench: workflows: $WORKFLOW_MEMBERS plain tasks, then a group" >&2
    rcli FLUSHALL >/dev/null
    "$TOOL" enqueue "$port" noop "$WORKFLOW_MEMBERS" bulk \
        >"$WORK/wf_plain.bulk" || fail "bulk enqueue failed"
    workflow_run wf_plain
    rcli FLUSHALL >/dev/null
    seq 1 "$WORKFLOW_MEMBERS" >"$WORK/members"
    "$BUILD/wharf" --redis "redis://127.0.0.1:$port/0" enqueue noop \
        --file "$WORK/members" --group night --then noop done \
        >/dev/null 2>"$WORK/wf_group.enqueue" ||
        fail "group enqueue failed; see $WORK/wf_group.enqueue"
    workflow_run wf_group
    for _ in $(seq 1 500); do
        [ "$(rcli HGET 'wharf:{night}:group' enqueued)" = 1 ] && break
        sleep 0.01
    done
    wf_counted=$(rcli HLEN 'wharf:{night}:group_done')
    rcli FLUSHALL >/dev/null
}
has_phase workflows && workflows

# ---- report ----
num() { [ -n "${1:-}" ] && echo "$1" || echo 0; }
ratio() { awk -v a="$(num "$1")" -v b="$(num "$2")" -v d="${3:-2}" \
    'BEGIN { if (b > 0) printf "%.*f", d, a / b; else printf "0" }'; }
verdict() { # verdict VALUE OP LIMIT: yes/no
    awk -v v="$(num "$1")" -v l="$3" -v op="$2" 'BEGIN {
        ok = (op == ">=") ? v >= l : v <= l; print ok ? "yes" : "NO" }'
}

rate=0 seconds=0 bulk_rate=0 bulk_redis_us=0 trips="" commands=0 redis_cpu=0
sup_hwm=0 worker_hwms="" worker_hwm_max=0 worker_cpu=0 sup_cpu=0
cmd_json="" usec_json="" base_rate=0 base_redis_cpu=0 base_commands=0
if has_phase process; then
    W=$WORK/wharf
    rate=$(value_of "$W.watch" rate)
    seconds=$(value_of "$W.watch" seconds)
    redis_cpu=$(value_of "$W.watch" redis_cpu_s)
    bulk_rate=$(value_of "$W.bulk" rate)
    bulk_redis_us=$(value_of "$W.bulk" redis_cpu_us_per_task)
    trips=$(cat "$W.trips")
    commands=$(awk '$1 == "cmd" { s += $3 } END { print s + 0 }' "$W.watch")
    cmd_json=$(awk -v n="$TASKS" '$1 == "cmd" {
        printf "%s\"%s\": %.3f", sep, $2, $3 / n; sep = ", " }' "$W.watch")
    usec_json=$(awk -v n="$TASKS" '$1 == "cmd" {
        printf "%s\"%s\": %.2f", sep, $2, $4 / n; sep = ", " }' "$W.watch")
    sup_hwm=$(awk '$1 == "supervisor" { print $2 }' "$W.procs")
    sup_cpu=$(awk '$1 == "supervisor" { print $3 }' "$W.procs")
    worker_hwms=$(awk '$1 == "worker" { printf "%s%s", sep, $2; sep = ", " }' \
        "$W.procs")
    worker_hwm_max=$(awk '$1 == "worker" && $2 > m { m = $2 } END { print m + 0 }' \
        "$W.procs")
    worker_cpu=$(awk '$1 == "worker" { s += $3 } END { print s + 0 }' "$W.procs")
    if [ -n "$BASELINE" ]; then
        base_rate=$(value_of "$WORK/baseline.watch" rate)
        base_redis_cpu=$(value_of "$WORK/baseline.watch" redis_cpu_s)
        base_commands=$(awk '$1 == "cmd" { s += $3 } END { print s + 0 }' \
            "$WORK/baseline.watch")
    fi
fi
tls_rate=0 tls_redis_cpu=0
if has_phase tls; then
    tls_rate=$(value_of "$WORK/tls.watch" rate)
    tls_redis_cpu=$(value_of "$WORK/tls.watch" redis_cpu_s)
fi
crash_rate=0 slow_rate=0 slow_crash_rate=0
if has_phase crash; then
    crash_rate=$(value_of "$WORK/crash.watch" rate)
    slow_rate=$(value_of "$WORK/slow.watch" rate)
    slow_crash_rate=$(value_of "$WORK/slow_crash.watch" rate)
fi
io_rate=0 io_of_limit=0 io_redis_us=0 io_cmds=0 io_pss=0 io_limit=0
iot_rate=0 iot_of_limit=0 iot_redis_us=0 iot_cmds=0 iot_pss=0 iot_limit=0
# io_figures NAME IN_FLIGHT PREFIX: the I/O run NAME's rate, its share of
# what IN_FLIGHT tasks of IO_MS allow, Redis CPU and commands per task and
# the host's PSS, into PREFIX_rate, _limit, _of_limit, _redis_us, _cmds
# and _pss.
io_figures() {
    local w=$WORK/$1 rate limit
    rate=$(value_of "$w.watch" rate)
    limit=$(awk -v w="$2" -v ms="$IO_MS" 'BEGIN { printf "%.0f", w * 1000 / ms }')
    printf -v "${3}_rate" %s "$rate"
    printf -v "${3}_limit" %s "$limit"
    printf -v "${3}_of_limit" %s "$(ratio "$rate" "$limit")"
    printf -v "${3}_redis_us" %s "$(awk \
        -v c="$(num "$(value_of "$w.watch" redis_cpu_s)")" -v n="$IO_TASKS" \
        'BEGIN { printf "%.2f", c * 1000000 / n }')"
    printf -v "${3}_cmds" %s "$(awk -v n="$IO_TASKS" '$1 == "cmd" { s += $3 }
        END { printf "%.2f", s / n }' "$w.watch")"
    printf -v "${3}_pss" %s "$(awk '{ s += $4 } END { print s + 0 }' "$w.procs")"
}
if has_phase io; then
    io_figures io "$IO_WORKERS" io
    io_figures io_threads "$((IO_THREADED_WORKERS * IO_THREADS))" iot
fi
py_rate=0 node_rate=0 py_io_rate=0 py_io_of_limit=0 py_io_limit=0
if has_phase handlers; then
    py_rate=$(value_of "$WORK/handler_py.watch" rate)
    node_rate=$(value_of "$WORK/handler_node.watch" rate)
    py_io_rate=$(value_of "$WORK/handler_io.watch" rate)
    py_io_limit=$(awk -v w="$IO_WORKERS" -v ms="$IO_MS" \
        'BEGIN { printf "%.0f", w * 1000 / ms }')
    py_io_of_limit=$(ratio "$py_io_rate" "$py_io_limit")
fi
p50=0 p99=0 p999=0 pmax=0 samples=0
if has_phase latency; then
    p50=$(value_of "$WORK/latency.pct" p50_us)
    p99=$(value_of "$WORK/latency.pct" p99_us)
    p999=$(value_of "$WORK/latency.pct" p999_us)
    pmax=$(value_of "$WORK/latency.pct" max_us)
    samples=$(value_of "$WORK/latency.pct" count)
fi
prio_p50=0 prio_p99=0 prio_samples=0 flat_p50=0 flat_p99=0
if has_phase priority; then
    prio_p50=$(value_of "$WORK/priority.pct" p50_us)
    prio_p99=$(value_of "$WORK/priority.pct" p99_us)
    prio_samples=$(value_of "$WORK/priority.pct" count)
    flat_p50=$(value_of "$WORK/priority_none.pct" p50_us)
    flat_p99=$(value_of "$WORK/priority_none.pct" p99_us)
fi
# The bound: the bulk type's task time, as measured in the strict run,
# x prefetch, in ms.
prio_task_us=$(has_phase priority && value_of "$WORK/priority.task" task_us ||
    echo "$PRIORITY_TASK_US")
prio_bound=$(awk -v u="$prio_task_us" -v p="$PREFETCH" \
    'BEGIN { printf "%.2f", u * p / 1000 }')
set_rps=$(awk -v a="$(num "$set_before")" -v b="$(num "$set_after")" \
    'BEGIN { n = (a > 0) + (b > 0); printf "%.0f", n ? (a + b) / n : 0 }')
per_task() { awk -v a="$(num "$1")" -v n="$TASKS" -v s="${2:-1}" \
    'BEGIN { printf "%.2f", a * s / n }'; }
cmds_per_task=$(per_task "$commands")
trips_per_task=$([ -n "$trips" ] && per_task "$trips" || echo "")
redis_us=$(per_task "$redis_cpu" 1000000)
worker_us=$(per_task "$worker_cpu" $((1000000 / CLK_TCK)))
of_set=$(ratio "$rate" "$set_rps")
ms() { awk -v u="$(num "$1")" 'BEGIN { printf "%.2f", u / 1000 }'; }
mib() { awk -v k="$(num "$1")" 'BEGIN { printf "%.1f", k / 1024 }'; }

row() { printf '  %-44s %14s   %-12s %s\n' "$@"; }
echo
echo "wharf bench: $TASKS tasks, $WORKERS workers, prefetch $PREFETCH," \
    "$(nproc 2>/dev/null || echo '?') CPUs, redis $(redis-server --version |
    awk '{ print $3 }' | sed 's/v=//')"
row "measure" "value" "target" "met"
if has_phase ceiling; then
    row "redis-benchmark SET (ops/s)" "$set_rps" "" ""
    [ "$set_after" != 0 ] &&
        row "  before / after processing" "$set_before / $set_after" "" ""
    row "redis-benchmark SET -P 16 (ops/s)" "$set_p16_rps" "" ""
    row "redis-benchmark EVALSHA 'return 1' (ops/s)" "$evalsha_rps" "" ""
fi
if has_phase enqueue; then
    row "enqueue, one a call (tasks/s)" "$single_rate" "" ""
    row "  redis CPU per task (us)" "$single_redis_us" "" ""
fi
if has_phase process; then
    has_phase enqueue &&
        row "enqueue, bulk (tasks/s)" "$bulk_rate" ">= 100000" \
            "$(verdict "$bulk_rate" ">=" 100000)" &&
        row "  redis CPU per task (us)" "$bulk_redis_us" "" ""
    row "processing (tasks/s)" "$rate" "" ""
    has_phase ceiling &&
        row "  as a share of SET" "$of_set" ">= 0.50" \
            "$(verdict "$of_set" ">=" 0.5)"
    [ -n "$BASELINE" ] &&
        row "  baseline wharfd (tasks/s)" "$base_rate" "" "" &&
        row "  this / baseline" "$(ratio "$rate" "$base_rate")" "" ""
    [ -n "$BASELINE" ] &&
        row "  baseline redis CPU per task (us)" \
            "$(per_task "$base_redis_cpu" 1000000)" "" "" &&
        row "  this / baseline" \
            "$(ratio "$redis_cpu" "$base_redis_cpu")" "" "" &&
        row "  baseline redis commands per task" \
            "$(per_task "$base_commands")" "" ""
    has_phase tls &&
        row "processing over TLS (tasks/s)" "$tls_rate" "" "" &&
        row "  of the plain rate" "$(ratio "$tls_rate" "$rate")" ">= 0.70" \
            "$(verdict "$(ratio "$tls_rate" "$rate")" ">=" 0.70)" &&
        row "  redis CPU per task over TLS (us)" \
            "$(per_task "$tls_redis_cpu" 1000000)" "" ""
    row "redis commands per task" "$cmds_per_task" "" ""
    row "round trips per task" "${trips_per_task:-n/a}" "<= 0.25" \
        "$([ -n "$trips_per_task" ] && verdict "$trips_per_task" "<=" 0.25)"
    row "redis CPU per task (us)" "$redis_us" "" ""
    row "worker CPU per task (us, all workers)" "$worker_us" "" ""
    row "supervisor CPU per task (us)" \
        "$(per_task "$sup_cpu" $((1000000 / CLK_TCK)))" "" ""
    row "supervisor peak RSS (MiB)" "$(mib "$sup_hwm")" "" ""
    row "worker peak RSS, largest (MiB)" "$(mib "$worker_hwm_max")" "< 8" \
        "$(verdict "$(mib "$worker_hwm_max")" "<=" 7.99)"
fi
if has_phase crash; then
    row "1 ms tasks, none crash (tasks/s)" "$slow_rate" "" ""
    row "1 ms tasks, $CRASH_PERMILLE/1000 crash (tasks/s)" \
        "$slow_crash_rate" "" ""
    row "  workers killed (tasks dead)" "$slow_crash_dead" "" ""
    row "  of the crash-free rate" "$(ratio "$slow_crash_rate" "$slow_rate")" \
        ">= 0.70" \
        "$(verdict "$(ratio "$slow_crash_rate" "$slow_rate")" ">=" 0.70)"
    row "no-op tasks, $CRASH_PERMILLE/1000 crash (tasks/s)" "$crash_rate" "" ""
    row "  workers killed (tasks dead)" "$crash_dead" "" ""
    has_phase process &&
        row "  of the crash-free rate" "$(ratio "$crash_rate" "$rate")" "" ""
fi
if has_phase io; then
    row "${IO_MS} ms I/O tasks, $IO_WORKERS workers (tasks/s)" "$io_rate" "" ""
    row "  of the limit, $IO_WORKERS in flight ($io_limit/s)" "$io_of_limit" \
        "" ""
    row "  redis CPU per task (us)" "$io_redis_us" "" ""
    row "  redis commands per task" "$io_cmds" "" ""
    row "  host memory, all processes (PSS, MiB)" "$(mib "$io_pss")" "" ""
    row "${IO_MS} ms I/O tasks, $IO_THREADED_WORKERS workers x $IO_THREADS threads (tasks/s)" \
        "$iot_rate" "" ""
    row "  of the limit, $((IO_THREADED_WORKERS * IO_THREADS)) in flight ($iot_limit/s)" \
        "$iot_of_limit" ">= 0.90" "$(verdict "$iot_of_limit" ">=" 0.90)"
    row "  redis CPU per task (us)" "$iot_redis_us" "<= 30" \
        "$(verdict "$iot_redis_us" "<=" 30)"
    row "  redis commands per task" "$iot_cmds" "" ""
    row "  host memory, all processes (PSS, MiB)" "$(mib "$iot_pss")" "<= 40" \
        "$(verdict "$(mib "$iot_pss")" "<=" 40)"
fi
if has_phase handlers; then
    # Goals: 5x Celery's prefork pool on no-op tasks (about 2,000/s
    # measured there) and BullMQ's 1 process x 32 (about 28,000/s).
    row "no-op Python handler, $WORKERS workers (tasks/s)" "$py_rate" \
        ">= 10000" "$(verdict "$py_rate" ">=" 10000)"
    has_phase process &&
        row "  of the C no-op" "$(ratio "$py_rate" "$rate")" "" ""
    row "no-op Node handler, ${WORKERS}x$HANDLER_THREADS (tasks/s)" "$node_rate" \
        ">= 28000" "$(verdict "$node_rate" ">=" 28000)"
    has_phase process &&
        row "  of the C no-op" "$(ratio "$node_rate" "$rate")" "" ""
    row "${IO_MS} ms I/O, async Python, 1x$IO_WORKERS (tasks/s)" \
        "$py_io_rate" "" ""
    row "  of the limit ($py_io_limit/s)" \
        "$py_io_of_limit" ">= 0.80" "$(verdict "$py_io_of_limit" ">=" 0.8)"
fi
if has_phase dead; then
    row "dead set search, $DEAD_RECORDS records (ms)" "$dead_search_ms" \
        "< 1000" "$(verdict "$dead_search_ms" "<=" 999)"
    row "  matches" "$dead_matches" "" ""
    row "  longest command meanwhile (ms; 0: under 1)" "$dead_longest_ms" "" ""
fi
if has_phase clients; then
    same=$(awk -v a="$c_client_cmds" -v b="$py_client_cmds" \
        -v c="$node_client_cmds" 'BEGIN { print (a == b && b == c) ? "yes" : "NO" }')
    row "bulk enqueue, C client (tasks/s)" "$c_client_rate" "" ""
    row "bulk enqueue, Python client (tasks/s)" "$py_client_rate" "" ""
    row "bulk enqueue, Node client (tasks/s)" "$node_client_rate" "" ""
    row "  redis commands per task, C / Py / Node" \
        "$c_client_cmds / $py_client_cmds / $node_client_cmds" "equal" "$same"
fi
if has_phase latency; then
    row "enqueue->start p50 at $RATE/s (ms)" "$(ms "$p50")" "" ""
    row "enqueue->start p99 (ms)" "$(ms "$p99")" "< 5" \
        "$(verdict "$(ms "$p99")" "<=" 4.99)"
    row "enqueue->start p99.9 (ms)" "$(ms "$p999")" "" ""
    row "enqueue->start max (ms, $samples samples)" "$(ms "$pmax")" "" ""
fi
if has_phase priority; then
    row "urgent $PRIORITY_RATE/s beside bulk, strict: p50 (ms)" \
        "$(ms "$prio_p50")" "" ""
    row "  p99 (ms, $prio_samples samples)" "$(ms "$prio_p99")" \
        "<= $prio_bound" "$(verdict "$(ms "$prio_p99")" "<=" "$prio_bound")"
    row "  bulk task time x prefetch (ms)" \
        "$(ms "$prio_task_us") x $PREFETCH = $prio_bound" "" ""
    row "  without priorities: p50 / p99 (ms)" \
        "$(ms "$flat_p50") / $(ms "$flat_p99")" "" ""
fi

# rates
rl_rate=0 rl_of_limit=0 rl_cmds=0 rl_redis_us=0
if has_phase rate; then
    rl_rate=$(value_of "$WORK/rate.watch" rate)
    rl_of_limit=$(ratio "$rl_rate" "$RATE_LIMIT")
    rl_cmds=$(awk -v n="$RATE_TASKS" '$1 == "cmd" { s += $3 }
        END { printf "%.2f", s / n }' "$WORK/rate.watch")
    rl_redis_us=$(awk -v n="$RATE_TASKS" \
        -v c="$(num "$(value_of "$WORK/rate.watch" redis_cpu_s)")" \
        'BEGIN { printf "%.2f", c * 1000000 / n }')
    row "rate_limit = $RATE_LIMIT/s, burst $PREFETCH (tasks/s)" "$rl_rate" "" ""
    row "  of the limit" "$rl_of_limit" "<= 1.01" \
        "$(verdict "$rl_of_limit" "<=" 1.01)"
    row "  redis commands per task" "$rl_cmds" "" ""
    row "  redis CPU per task (us)" "$rl_redis_us" "" ""
fi
if has_phase workflows; then
    wf_cmds() { awk -v n="$WORKFLOW_MEMBERS" '$1 == "cmd" { s += $3 }
        END { printf "%.2f", s / n }' "$WORK/$1.watch"; }
    wf_redis_us() { awk -v c="$(num "$(value_of "$WORK/$1.watch" redis_cpu_s)")" \
        -v n="$WORKFLOW_MEMBERS" 'BEGIN { printf "%.2f", c * 1000000 / n }'; }
    wf_cpu_us() { awk -v n="$WORKFLOW_MEMBERS" -v t="$CLK_TCK" \
        '{ s += $2 } END { printf "%.2f", s * 1000000 / t / n }' \
        "$WORK/$1.procs"; }
    row "group of $WORKFLOW_MEMBERS, members counted" "$wf_counted" \
        "$WORKFLOW_MEMBERS" "$(verdict "$wf_counted" ">=" "$WORKFLOW_MEMBERS")"
    row "  redis commands per task, plain / member" \
        "$(wf_cmds wf_plain) / $(wf_cmds wf_group)" "" ""
    row "  redis CPU per task (us), plain / member" \
        "$(wf_redis_us wf_plain) / $(wf_redis_us wf_group)" "" ""
    row "  host CPU per task (us), plain / member" \
        "$(wf_cpu_us wf_plain) / $(wf_cpu_us wf_group)" "" ""
    row "  tasks/s, plain / member" "$(value_of "$WORK/wf_plain.watch" rate) / $(value_of "$WORK/wf_group.watch" rate)" "" ""
fi

mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
{
  "when": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)",
  "cpus": $(nproc 2>/dev/null || echo 0),
  "config": {"tasks": $TASKS, "workers": $WORKERS, "prefetch": $PREFETCH,
             "steady_rate": $RATE, "steady_seconds": $STEADY_SECONDS},
  "redis_benchmark": {"set": $(num "$set_rps"),
                      "set_before": $(num "$set_before"),
                      "set_after": $(num "$set_after"),
                      "set_p16": $(num "$set_p16_rps"),
                      "evalsha": $(num "$evalsha_rps")},
  "enqueue": {"single_per_s": $(num "$single_rate"),
              "single_redis_cpu_us": $(num "$single_redis_us"),
              "bulk_per_s": $(num "$bulk_rate"),
              "bulk_redis_cpu_us": $(num "$bulk_redis_us")},
  "clients": {"tasks": $CLIENT_TASKS,
              "c": {"per_s": $(num "$c_client_rate"), "commands_per_task": $(num "$c_client_cmds")},
              "python": {"per_s": $(num "$py_client_rate"), "commands_per_task": $(num "$py_client_cmds")},
              "node": {"per_s": $(num "$node_client_rate"), "commands_per_task": $(num "$node_client_cmds")}},
  "poison": {"crash_permille": $CRASH_PERMILLE, "tasks_1ms": $CRASH_TASKS,
             "tasks_1ms_per_s": $(num "$slow_rate"),
             "tasks_1ms_crashing_per_s": $(num "$slow_crash_rate"),
             "tasks_1ms_crashed": $(num "$slow_crash_dead"),
             "tasks_1ms_of_crash_free": $(ratio "$slow_crash_rate" "$slow_rate"),
             "noop_crashing_per_s": $(num "$crash_rate"),
             "noop_crashed": $(num "$crash_dead"),
             "noop_of_crash_free": $(ratio "$crash_rate" "$rate")},
  "processing": {"tasks_per_s": $(num "$rate"), "seconds": $(num "$seconds"),
                 "share_of_set": $(num "$of_set"),
                 "baseline_tasks_per_s": $(num "$base_rate"),
                 "baseline_redis_cpu_us": $(per_task "$base_redis_cpu" 1000000),
                 "baseline_redis_commands": $(per_task "$base_commands"),
                 "tls_tasks_per_s": $(num "$tls_rate"),
                 "tls_of_plain": $(ratio "$tls_rate" "$rate"),
                 "tls_redis_cpu_us": $(per_task "$tls_redis_cpu" 1000000)},
  "cost_per_task": {"redis_commands": $(num "$cmds_per_task"),
                    "round_trips": ${trips_per_task:-null},
                    "redis_cpu_us": $(num "$redis_us"),
                    "worker_cpu_us": $(num "$worker_us"),
                    "commands": {$cmd_json},
                    "command_usec": {$usec_json}},
  "handlers": {"tasks": $HANDLER_TASKS,
               "python_per_s": $(num "$py_rate"),
               "node_per_s": $(num "$node_rate"),
               "python_of_c": $(ratio "$py_rate" "$rate"),
               "node_of_c": $(ratio "$node_rate" "$rate"),
               "python_io_per_s": $(num "$py_io_rate"),
               "python_io_of_limit": $(num "$py_io_of_limit")},
  "dead_search": {"records": $DEAD_RECORDS, "ms": $(num "$dead_search_ms"),
                  "matches": $(num "$dead_matches"),
                  "longest_command_ms": $(num "$dead_longest_ms")},
  "io": {"tasks": $IO_TASKS, "task_ms": $IO_MS, "workers": $IO_WORKERS,
         "tasks_per_s": $(num "$io_rate"), "of_limit": $(num "$io_of_limit"),
         "redis_cpu_us": $(num "$io_redis_us"),
         "redis_commands": $(num "$io_cmds"),
         "host_pss_kib": $(num "$io_pss")},
  "io_threads": {"tasks": $IO_TASKS, "task_ms": $IO_MS,
                 "workers": $IO_THREADED_WORKERS, "threads": $IO_THREADS,
                 "tasks_per_s": $(num "$iot_rate"),
                 "of_limit": $(num "$iot_of_limit"),
                 "redis_cpu_us": $(num "$iot_redis_us"),
                 "redis_commands": $(num "$iot_cmds"),
                 "host_pss_kib": $(num "$iot_pss")},
  "latency_us": {"rate": $RATE, "samples": $(num "$samples"),
                 "p50": $(num "$p50"), "p99": $(num "$p99"),
                 "p999": $(num "$p999"), "max": $(num "$pmax")},
  "priority_us": {"bulk": $PRIORITY_BULK, "bulk_task_us": $PRIORITY_TASK_US,
                  "rate": $PRIORITY_RATE, "samples": $(num "$prio_samples"),
                  "strict_p50": $(num "$prio_p50"),
                  "strict_p99": $(num "$prio_p99"),
                  "task_us": $(num "$prio_task_us"),
                  "bound": $(awk -v b="$prio_bound" 'BEGIN { print b * 1000 }'),
                  "none_p50": $(num "$flat_p50"),
                  "none_p99": $(num "$flat_p99")},
  "rate_limit": {"tasks": $RATE_TASKS, "limit_per_s": $RATE_LIMIT,
                 "burst": $PREFETCH, "tasks_per_s": $(num "$rl_rate"),
                 "of_limit": $(num "$rl_of_limit"),
                 "redis_commands": $(num "$rl_cmds"),
                 "redis_cpu_us": $(num "$rl_redis_us")},
  "memory_kib": {"supervisor_hwm": $(num "$sup_hwm"),
                 "worker_hwm": [$worker_hwms]}
}
EOF
echo
echo "results: $OUT"
if has_phase cluster; then
    # Its own servers, after ours are stopped: the machine is shared.
    stop_pid "$redis_pid"
    redis_pid=""
    BUILD=$BUILD bash bench/cluster.sh
fi
