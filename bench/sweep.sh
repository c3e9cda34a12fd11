#!/usr/bin/env bash
# bench/sweep.sh: the tables of docs/tuning.md. Runs bench/run.sh's
# processing and latency phases for each workers x prefetch pair with
# no-op tasks, then the processing phase with tasks that sleep 1 ms, and
# prints Markdown tables. Each row is the run with the median tasks/s of
# SWEEP_REPEAT runs (the machine's speed drifts). Several minutes; not
# part of `make bench`.
#   BUILD=build bash bench/sweep.sh
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TASKS=${SWEEP_TASKS:-50000}
SLOW_TASKS=${SWEEP_SLOW_TASKS:-5000}
REPEAT=${SWEEP_REPEAT:-3}
OUTDIR=$BUILD/bench/sweep
mkdir -p "$OUTDIR"

# json_num FILE KEY: the first number after "KEY": in a results file.
json_num() {
    grep -o "\"$2\": [-0-9.e+]*" "$1" | sed -n 1p | awk '{ print $2 }'
}
# median_run NAME ENV...: runs bench/run.sh REPEAT times with ENV, and
# copies the run with the median tasks/s to $OUTDIR/NAME.json.
median_run() {
    local name=$1 i out
    shift
    for i in $(seq 1 "$REPEAT"); do
        out=$OUTDIR/$name.$i.json
        env BUILD="$BUILD" BENCH_OUT="$out" "$@" bash bench/run.sh \
            >/dev/null 2>&1 || { echo "sweep: run failed: $name" >&2; exit 1; }
        echo "$(json_num "$out" tasks_per_s) $out"
    done | sort -n | awk -v m=$(((REPEAT + 1) / 2)) 'NR == m { print $2 }' |
        xargs -I{} cp {} "$OUTDIR/$name.json"
}
worker_mib() {
    grep -o '"worker_hwm": \[[0-9, ]*\]' "$1" | tr -c '0-9\n' ' ' |
        awk '{ m = 0; for (i = 1; i <= NF; i++) if ($i > m) m = $i;
               printf "%.1f", m / 1024 }'
}

echo "No-op tasks: $TASKS pre-enqueued; latency at 1000 tasks/s for 3 s."
echo
echo "| workers | prefetch | tasks/s | round trips/task | Redis CPU us/task |" \
    "p50 ms | p99 ms | p99.9 ms | worker RSS MiB |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for w in 1 2 4; do
    for p in 1 4 16 64; do
        out=$OUTDIR/noop-w$w-p$p.json
        median_run "noop-w$w-p$p" BENCH_WORKERS=$w BENCH_PREFETCH=$p \
            BENCH_TASKS=$TASKS BENCH_STEADY_SECONDS=3 \
            BENCH_PHASES=process,latency
        printf '| %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %s |\n' \
            "$w" "$p" "$(json_num "$out" tasks_per_s)" \
            "$(json_num "$out" round_trips)" \
            "$(json_num "$out" redis_cpu_us)" \
            "$(awk -v u="$(json_num "$out" p50)" 'BEGIN { print u / 1000 }')" \
            "$(awk -v u="$(json_num "$out" p99)" 'BEGIN { print u / 1000 }')" \
            "$(awk -v u="$(json_num "$out" p999)" 'BEGIN { print u / 1000 }')" \
            "$(worker_mib "$out")"
    done
done

echo
echo "Tasks that sleep 1 ms (waiting on I/O): $SLOW_TASKS pre-enqueued."
echo
echo "| workers | prefetch | tasks/s |"
echo "|---:|---:|---:|"
for w in 1 2 4 8; do
    for p in 1 16; do
        out=$OUTDIR/sleep-w$w-p$p.json
        median_run "sleep-w$w-p$p" BENCH_WORKERS=$w BENCH_PREFETCH=$p \
            BENCH_TASKS=$SLOW_TASKS BENCH_PHASES=process \
            BENCH_PLUGIN_KEYS="sleep_us = 1000"
        printf '| %s | %s | %s |\n' "$w" "$p" \
            "$(json_num "$out" tasks_per_s)"
    done
done
