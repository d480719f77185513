#!/usr/bin/env bash
# Builds the host-fuzz variant (libFuzzer + ASan + UBSan, every FM5_ASSERT on) and runs
# tests/fuzz/fuzz_heap.c for FUZZ_SECONDS seconds (default 60): `make fuzz FUZZ_SECONDS=600`.
#   FUZZ_MAX_LEN   the longest input libFuzzer tries (default 1024 bytes)
#   FUZZ_JOBS      parallel fuzzing processes (default 1; the machine is shared)
# Any further arguments go to libFuzzer. The corpus grows in build/host-fuzz/fuzz/corpus across runs
# (the committed seeds in tests/fuzz/corpus are read, never written). A finding ends the run with a
# non-zero exit status and the path of its reproducer; replay it with build/host-fuzz/bin/fuzz_heap FILE.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

seconds=${FUZZ_SECONDS:-60}
max_len=${FUZZ_MAX_LEN:-1024}
jobs=${FUZZ_JOBS:-1}
tree=build/host-fuzz
work=$tree/fuzz

cmake --preset host-fuzz >/dev/null
if ! cmake --build --preset host-fuzz --target fuzz_heap; then
    echo "fuzz: could not build fuzz_heap (cmake/host.cmake must add tests/fuzz when FM5_FUZZ is on)" >&2
    exit 1
fi

mkdir -p "$work/corpus" "$work/artifacts"
# A failed FM5_ASSERT ends the process by _exit(134), past libFuzzer's crash handler: the harness then
# leaves the input it was running in last-input.
export FM5_FUZZ_LAST_INPUT=$PWD/$work/last-input
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:allow_user_segv_handler=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

parallel=()
if [ "$jobs" -gt 1 ]; then
    parallel=(-fork="$jobs" -ignore_crashes=0)
fi

echo "fuzz: fuzz_heap for $seconds s (inputs up to $max_len bytes), corpus $work/corpus"
status=0
"$tree/bin/fuzz_heap" -max_total_time="$seconds" -max_len="$max_len" -timeout=60 -print_final_stats=1 \
    -artifact_prefix="$PWD/$work/artifacts/" "${parallel[@]}" "$@" "$work/corpus" tests/fuzz/corpus || status=$?

if [ "$status" != 0 ]; then
    newest=$(ls -t "$work/artifacts" 2>/dev/null | head -n 1)
    if [ -n "$newest" ]; then
        echo "fuzz: fuzz_heap failed (exit $status); reproducer: $work/artifacts/$newest" >&2
    else
        echo "fuzz: fuzz_heap failed (exit $status) without an artifact (an FM5_ASSERT?);" \
             "the input it was running: $work/last-input" >&2
    fi
    echo "fuzz: replay with $tree/bin/fuzz_heap <reproducer>; shrink with -minimize_crash=1 -runs=10000" >&2
    exit "$status"
fi
echo "fuzz: no finding in $seconds s"
