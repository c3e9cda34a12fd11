# Sourced by bench/run.sh and bench/cluster.sh: stops a process this
# script started, by pid, whatever happened.
stop_pid() { # stop_pid PID: TERM, then KILL after 5 s
    local pid=$1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 250); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.02
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
