#!/bin/sh
# bench_smoke: runs every workload of `fm5bench --list` at a tiny scale with every allocator (the
# debug workloads with fm5 only; the echo servers with 1 and 10 clients only) and checks that each run
# exits 0 with one well-formed RESULT line, and that ops is above zero and the same for every
# allocator of a workload (the workloads are deterministic).
# Usage: smoke.sh BUILD_DIR WINE_RUN FM5BENCH.exe
set -u
build=$1 run=$2 exe=$3
scale=0.01
allocators="fm5 heap msvcrt ucrtbase"
failures=0 runs=0
start=$(date +%s)
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

if ! "$run" "$build" "$exe" --list >"$out" 2>"$err"; then
    echo "FAIL: fm5bench --list"; cat "$err"; exit 1
fi
list=$(tr -d '\r' <"$out")
[ -n "$list" ] || { echo "FAIL: --list printed nothing"; exit 1; }

echo "$list" | while read -r name category threads; do
    case $category in
        st-realloc|mt-realloc|st-allocfree|mt-allocfree|st-replay|mt-replay|debug|server) ;;
        *) echo "FAIL: $name: unknown category '$category'"; exit 1 ;;
    esac
    case $threads in ''|*[!0-9]*) echo "FAIL: $name: bad thread count '$threads'"; exit 1 ;; esac
done || exit 1

# One run: prints the ops of a good run, or nothing (and a FAIL line on stderr).
run_one() { # name allocator
    "$run" "$build" "$exe" --workload "$1" --allocator "$2" --scale "$scale" >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: $1 $2: exit code $rc" >&2; sed 's/^/    /' "$err" >&2; return
    fi
    lines=$(tr -d '\r' <"$out")
    if [ "$(printf '%s\n' "$lines" | wc -l)" -ne 1 ]; then
        echo "FAIL: $1 $2: expected one line, got: $lines" >&2; return
    fi
    pattern="^RESULT workload=$1 allocator=$2 ms=[0-9][0-9]*\.[0-9][0-9][0-9] ops=[1-9][0-9]* peak_commit_kb=[0-9][0-9]* peak_ws_kb=[0-9][0-9]*\$"
    if ! printf '%s\n' "$lines" | grep -q "$pattern"; then
        echo "FAIL: $1 $2: malformed: $lines" >&2; return
    fi
    printf '%s\n' "$lines" | sed 's/.* ops=\([0-9]*\) .*/\1/'
}

summary=$(echo "$list" | while read -r name category threads; do
    case $name in echo_server_1|echo_server_10) ;; echo_server_*) continue ;; esac
    if [ "$category" = debug ]; then set -- fm5; else set -- $allocators; fi
    reference=""
    for allocator in "$@"; do
        ops=$(run_one "$name" "$allocator")
        echo "run"
        if [ -z "$ops" ]; then echo "fail"; continue; fi
        if [ -z "$reference" ]; then
            reference=$ops
        elif [ "$ops" != "$reference" ]; then
            echo "FAIL: $name: ops $ops with $allocator, $reference with $1" >&2; echo "fail"
        fi
    done
    echo "ok $name ops=$reference" >&2
done)
runs=$(printf '%s\n' "$summary" | grep -c '^run$')
failures=$(printf '%s\n' "$summary" | grep -c '^fail$')
echo "bench_smoke: $runs runs, $failures failed, $(( $(date +%s) - start )) s"
[ "$failures" -eq 0 ]
