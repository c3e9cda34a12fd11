#!/usr/bin/env bash
# make bench, the cluster rows: no-op throughput and Redis CPU per task on
# one redis-server against a 3-primary Redis Cluster (all on this
# machine), and what [redis] min_replicas_ack = 1 costs per task on a
# primary with one replica. Each run: CLUSTER_TYPES types, CLUSTER_TASKS
# tasks in all, enqueued first (wharf enqueue --file), then one wharfd
# (2 workers) processes them; the clock runs from its start until wharf
# stats counts nothing ready, running or delayed. Prints rows in run.sh's
# table format and writes $BUILD/bench/cluster.json. Stops only the
# processes it started.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TASKS=${CLUSTER_TASKS:-60000}
NTYPES=${CLUSTER_TYPES:-12}
WORKERS=${BENCH_WORKERS:-2}
OUT=${CLUSTER_OUT:-$BUILD/bench/cluster.json}
TOOL=$BUILD/bench/wharf-bench
WHARFD=$BUILD/wharfd
WHARF=$BUILD/wharf
for f in "$TOOL" "$WHARFD" "$WHARF" "$BUILD/bench/noop.so"; do
    [ -e "$f" ] || { echo "bench: $f is missing; run make first" >&2; exit 69; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/wharf-bench-cluster.XXXXXX")
PLUGINS=$(cd "$BUILD/bench" && pwd)
pids=()
# shellcheck source=bench/stop_pid.sh
. bench/stop_pid.sh
cleanup() {
    local status=$?
    for p in "${pids[@]}"; do stop_pid "$p"; done
    if [ "$status" = 0 ]; then rm -rf "$WORK"; else
        echo "bench: cluster logs kept in $WORK" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "bench: cluster: $*" >&2; exit 1; }

# start_node NAME [ARGS...]: a redis-server on a free port, in $port.
port=""
start_node() {
    local name=$1
    shift
    port=$("$TOOL" free-port)
    mkdir -p "$WORK/$name"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$WORK/$name" --logfile "$WORK/$name/redis.log" \
        --repl-diskless-sync-delay 0 --daemonize no "$@" \
        </dev/null >/dev/null 2>&1 &
    pids+=($!)
    for _ in $(seq 1 250); do
        redis-cli -p "$port" PING >/dev/null 2>&1 && return 0
        sleep 0.02
    done
    fail "redis-server $name did not start"
}
cpu_of() { # cpu_of PORT...: Redis CPU seconds so far, summed
    local total=0 p
    for p in "$@"; do
        total=$(redis-cli -p "$p" INFO cpu | awk -F: -v t="$total" \
            '/^used_cpu_(sys|user):/ { t += $2 } END { printf "%.4f", t }')
    done
    echo "$total"
}
now_ms() { date +%s%3N; }

TYPES=()
for i in $(seq 0 $((NTYPES - 1))); do TYPES+=("c$i"); done
manifest() { # manifest FILE URL [MORE REDIS KEYS]
    cat >"$1" <<EOF
[host]
plugins_dir = $PLUGINS
autoload = no
insecure_plugins = yes
workers = $WORKERS
shutdown_timeout = 5s
instance = bench-cluster
[redis]
url = $2
${3:-}
[metrics]
listen = off
[log]
level = warn
[plugin.noop]
path = noop.so
types = $(IFS=,; echo "${TYPES[*]}")
EOF
}
# Payload files, one a type, unique per run.
per_type=$((TASKS / NTYPES))
for t in "${TYPES[@]}"; do
    awk -v t="$t" -v n="$per_type" -v tag="$$" \
        'BEGIN { for (i = 0; i < n; i++) print tag "-" t "-" i }' \
        >"$WORK/$t.txt"
done

# enqueue_all INI: every type's file, one wharf enqueue --file each; prints
# the milliseconds it took.
enqueue_all() {
    local start
    start=$(now_ms)
    for t in "${TYPES[@]}"; do
        "$WHARF" --config "$1" enqueue "$t" --file "$WORK/$t.txt" \
            >/dev/null 2>>"$WORK/enqueue.log" || fail "enqueue failed"
    done
    echo $(($(now_ms) - start))
}
# backlog INI: ready + running + delayed over every type.
backlog() {
    "$WHARF" --config "$1" stats --json | tr '{},' '\n\n\n' |
        awk -F': ' '/"(ready|running|delayed)"/ { s += $2 } END { print s + 0 }'
}
# run NAME URL PORTS [REDIS KEYS]: enqueue, process; writes NAME.result:
# "rate redis_us_per_task enqueue_per_s".
run() {
    local name=$1 url=$2 ports=$3 ini=$WORK/$1.ini start end cpu0 cpu1 pid
    local enq_ms
    manifest "$ini" "$url" "${4:-}"
    echo "bench: cluster: $name: enqueueing $TASKS tasks of $NTYPES types" >&2
    enq_ms=$(enqueue_all "$ini")
    # shellcheck disable=SC2086 # the ports split on purpose
    cpu0=$(cpu_of $ports)
    start=$(now_ms)
    "$WHARFD" --config "$ini" </dev/null >/dev/null 2>"$WORK/$name.log" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 6000); do
        [ "$(backlog "$ini")" = 0 ] && break
        kill -0 "$pid" 2>/dev/null || fail "$name: wharfd exited; see $WORK/$name.log"
        sleep 0.05
    done
    end=$(now_ms)
    # shellcheck disable=SC2086
    cpu1=$(cpu_of $ports)
    stop_pid "$pid"
    awk -v n="$TASKS" -v ms=$((end - start)) -v c0="$cpu0" -v c1="$cpu1" \
        -v ems="$enq_ms" 'BEGIN {
            printf "%.0f %.2f %.0f\n", n * 1000 / ms, (c1 - c0) * 1e6 / n,
                   n * 1000 / ems }' >"$WORK/$name.result"
}
field() { awk -v k="$2" '{ print $k }' "$WORK/$1.result"; }

# ---- one node ----
start_node single
single=$port
run single "redis://127.0.0.1:$single/0" "$single"

# ---- a 3-primary cluster ----
cports=()
for i in 0 1 2; do
    start_node "c$i" --cluster-enabled yes --cluster-config-file nodes.conf \
        --cluster-node-timeout 2000
    cports+=("$port")
done
redis-cli --cluster create "${cports[@]/#/127.0.0.1:}" --cluster-yes \
    >"$WORK/create.log" 2>&1 || fail "redis-cli --cluster create failed"
for _ in $(seq 1 500); do
    ok=0
    for p in "${cports[@]}"; do
        redis-cli -p "$p" CLUSTER INFO | grep cluster_state:ok >/dev/null && ok=$((ok + 1))
    done
    [ "$ok" = 3 ] && break
    sleep 0.02
done
run cluster "redis+cluster://127.0.0.1:${cports[0]},127.0.0.1:${cports[1]}" \
    "${cports[*]}"

# ---- a primary with one replica: min_replicas_ack 0 and 1 ----
start_node primary
primary=$port
start_node replica --replicaof 127.0.0.1 "$primary"
replica=$port
for _ in $(seq 1 500); do
    redis-cli -p "$replica" INFO replication | grep master_link_status:up >/dev/null && break
    sleep 0.02
done
run async "redis://127.0.0.1:$primary/0" "$primary"
redis-cli -p "$primary" FLUSHALL >/dev/null
run wait1 "redis://127.0.0.1:$primary/0" "$primary" "min_replicas_ack = 1"

s_rate=$(field single 1) c_rate=$(field cluster 1)
s_cpu=$(field single 2) c_cpu=$(field cluster 2)
a_rate=$(field async 1) w_rate=$(field wait1 1)
a_enq=$(field async 3) w_enq=$(field wait1 3)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
extra_us() { awk -v a="$1" -v b="$2" \
    'BEGIN { printf "%.1f", (a > 0 && b > 0) ? 1e6 / b - 1e6 / a : 0 }'; }

row() { printf '  %-44s %14s   %-12s %s\n' "$@"; }
echo
echo "wharf bench, cluster rows: $TASKS no-op tasks of $NTYPES types," \
    "$WORKERS workers, $(nproc 2>/dev/null || echo '?') CPUs"
row "measure" "value" "" ""
row "1 node: processing (tasks/s)" "$s_rate" "" ""
row "  redis CPU per task (us)" "$s_cpu" "" ""
row "3-primary cluster: processing (tasks/s)" "$c_rate" "" ""
row "  redis CPU per task, all primaries (us)" "$c_cpu" "" ""
row "  cluster / 1 node" "$(ratio "$c_rate" "$s_rate")" "" ""
row "primary + replica: processing (tasks/s)" "$a_rate" "" ""
row "  with min_replicas_ack = 1 (tasks/s)" "$w_rate" "" ""
row "  cost of the WAIT per task (us)" "$(extra_us "$a_rate" "$w_rate")" "" ""
row "  enqueue --file (tasks/s)" "$a_enq" "" ""
row "  enqueue with min_replicas_ack = 1" "$w_enq" "" ""
mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
{
  "when": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)",
  "cpus": $(nproc 2>/dev/null || echo 0),
  "config": {"tasks": $TASKS, "types": $NTYPES, "workers": $WORKERS},
  "single": {"tasks_per_s": $s_rate, "redis_cpu_us": $s_cpu},
  "cluster": {"primaries": 3, "tasks_per_s": $c_rate, "redis_cpu_us": $c_cpu,
              "ratio": $(ratio "$c_rate" "$s_rate")},
  "min_replicas_ack": {"off_tasks_per_s": $a_rate, "on_tasks_per_s": $w_rate,
                       "extra_us_per_task": $(extra_us "$a_rate" "$w_rate"),
                       "enqueue_off_per_s": $a_enq,
                       "enqueue_on_per_s": $w_enq}
}
EOF
echo "results: $OUT"
