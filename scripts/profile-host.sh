#!/usr/bin/env bash
# The host build's profiler and cross-check (docs/host-build.md). Builds the host-profile preset
# (no sanitizer, -O2) and then either
#   scripts/profile-host.sh record pair 64 10000000   perf record -g of one alloc_free_loop workload,
#                                                     then the top of perf report and the hottest
#                                                     instructions of the two hottest symbols
#   scripts/profile-host.sh compare [ROUNDS]          fm5, glibc's malloc and (when libmimalloc.so.2
#                                                     is installed) mimalloc on the same loops,
#                                                     alternating processes, medians of ROUNDS (9)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[ -f build/host-profile/build.ninja ] || cmake --preset host-profile >/dev/null
cmake --build --preset host-profile >/dev/null
loop=build/host-profile/bin/alloc_free_loop

case "${1:-}" in
record)
    shift
    command -v perf >/dev/null || { echo "perf is missing: apt-get install linux-perf" >&2; exit 1; }
    data=build/host-profile/perf.data
    perf record -g -o "$data" "$loop" "$@" 2>&1 | grep -v "^\[ perf record"
    perf report -i "$data" --stdio --no-children --percent-limit 2 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40
    for symbol in $(perf report -i "$data" --stdio --no-children -g none --sort symbol 2>/dev/null |
                    awk '/^ +[0-9.]+%/ {print $3}' | head -2); do
        echo "== hottest instructions of $symbol"
        perf annotate -i "$data" --stdio -s "$symbol" 2>/dev/null | grep -E '^ +[0-9]+\.[0-9]+ :' | sort -rn | head -5
    done
    ;;
compare)
    rounds=${2:-9}
    mimalloc=$(ls /usr/lib/x86_64-linux-gnu/libmimalloc.so.2* 2>/dev/null | head -n 1 || true)
    allocators="fm5 glibc"
    [ -n "$mimalloc" ] && allocators="$allocators mimalloc"
    workloads=("pair 64 10000000" "pair 1024 10000000" "pair 4097 2000000" "ring 5000000")
    results=$(mktemp)
    for ((r = 0; r < rounds; r++)); do
        for workload in "${workloads[@]}"; do
            for allocator in $allocators; do
                case $allocator in
                fm5) line=$("$loop" $workload) ;;
                glibc) line=$(FM5_LOOP_ALLOCATOR=libc "$loop" $workload) ;;
                mimalloc) line=$(LD_PRELOAD=$mimalloc FM5_LOOP_ALLOCATOR=libc "$loop" $workload) ;;
                esac
                echo "$allocator $line" >>"$results"
            done
        done
    done
    # ns per operation: milliseconds * 1e6 / iterations; the median of the rounds.
    python3 - "$results" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    allocator, workload, iterations, ms = line.split()
    runs[(workload, allocator)].append(float(ms) * 1e6 / int(iterations))
workloads = sorted({w for w, _ in runs}, key=lambda w: (w[0] != "p", len(w), w))
allocators = sorted({a for _, a in runs}, key=lambda a: ["fm5", "glibc", "mimalloc"].index(a))
print("| workload | " + " | ".join(allocators) + " |")
print("|---|" + "---:|" * len(allocators))
for w in workloads:
    cells = []
    for a in allocators:
        v = sorted(runs[(w, a)])
        cells.append(f"{statistics.median(v):.1f} [{v[0]:.1f}, {v[-1]:.1f}]")
    print(f"| {w} | " + " | ".join(cells) + " |")
PY
    rm -f "$results"
    ;;
*)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac
