#!/bin/sh
# A wharf handler in POSIX sh with head, od, tr and printf, from
# docs/handlers.md alone: each task's result is its payload with a-z in
# upper case (binary-safe: the payload goes through a file, never a
# variable); a payload "fail" is a fail frame, "retry" a retry frame
# with a 250 ms delay, and each task first sends a log frame. It reads
# one frame at a time, so it holds one task at a time.
set -u
tmp=$(mktemp -d) || exit 70
trap 'rm -rf "$tmp"' EXIT

# A u32 of stdin, or nothing at its end.
read_u32() {
    set -- $(head -c 4 | od -An -tu1)
    [ $# -eq 4 ] && echo $((($1 << 24) | ($2 << 16) | ($3 << 8) | $4))
}

# A u32 of the body file at offset $1.
body_u32() {
    set -- $(od -An -tu1 -j "$1" -N 4 "$tmp/body")
    echo $((($1 << 24) | ($2 << 16) | ($3 << 8) | $4))
}

put_u32() {
    printf "\\$(printf %03o $((($1 >> 24) & 255)))"
    printf "\\$(printf %03o $((($1 >> 16) & 255)))"
    printf "\\$(printf %03o $((($1 >> 8) & 255)))"
    printf "\\$(printf %03o $(($1 & 255)))"
}

# A frame: kind $1, request $2, the body from file $3.
put_frame() {
    put_u32 $((5 + $(wc -c <"$3")))
    printf %s "$1"
    put_u32 "$2"
    cat "$3"
}

# A blob (u32 count, bytes) of file $1, appended to file $2.
put_blob() {
    put_u32 "$(wc -c <"$1")" >>"$2"
    cat "$1" >>"$2"
}

while :; do
    len=$(read_u32)
    [ -n "$len" ] || exit 0 # stdin closed: the host stops this program
    kind=$(head -c 1)
    request=$(read_u32)
    head -c $((len - 5)) >"$tmp/body"
    case $kind in
    H)
        put_u32 1 >"$tmp/out"
        put_frame R 0 "$tmp/out"
        ;;
    T)
        # attempt, max_attempts, fence, enqueued_at_ms, deadline_in_ms:
        # 32 bytes; then the blobs id, type, trace and payload.
        at=32
        for field in id type trace payload; do
            n=$(body_u32 $at)
            tail -c +$((at + 5)) "$tmp/body" | head -c "$n" >"$tmp/$field"
            at=$((at + 4 + n))
        done
        printf 'upper-casing %s bytes' "$(wc -c <"$tmp/payload")" >"$tmp/msg"
        printf '\001' >"$tmp/out"
        put_blob "$tmp/msg" "$tmp/out"
        put_frame L "$request" "$tmp/out"
        : >"$tmp/out"
        case $(cat "$tmp/payload") in
        fail)
            printf 'asked to fail' >"$tmp/msg"
            put_blob "$tmp/msg" "$tmp/out"
            put_frame F "$request" "$tmp/out"
            ;;
        retry)
            printf 'asked to retry' >"$tmp/msg"
            printf '\000\000\000\000\000\000\000\372' >"$tmp/out"
            put_blob "$tmp/msg" "$tmp/out"
            put_frame Y "$request" "$tmp/out"
            ;;
        *)
            tr a-z A-Z <"$tmp/payload" >"$tmp/result"
            put_blob "$tmp/result" "$tmp/out"
            put_frame O "$request" "$tmp/out"
            ;;
        esac
        ;;
    C) ;; # one task at a time: a cancel only crosses its answer
    *) exit 70 ;;
    esac
done
