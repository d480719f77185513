#!/usr/bin/env bash
# Prices debug mode: malloc+free of one block in debug mode (FM5_DEBUG=1) against release mode, with
# stack traces at depth 0 and 20, as paired A/B processes in alternation (A = release, B = debug).
# The same DLL serves both; only the environment differs.
#   scripts/measure-debug-mode.sh [win32|win64] [pairs]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-win64}
pairs=${2:-15}
case "$arch" in
    win32) cc=i686-w64-mingw32-gcc bits=32 ;;
    win64) cc=x86_64-w64-mingw32-gcc bits=64 ;;
    *) echo "usage: $0 [win32|win64] [pairs]" >&2; exit 2 ;;
esac
make --no-print-directory all >&2
out=build/measure-debug-mode/$arch
mkdir -p "$out"
cp "$arch/fm5_$bits.dll" "$out/"
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -I"$arch" -o "$out/alloc_free_loop.exe" bench/alloc_free_loop.c \
    "$arch/libfm5_$bits.dll.a"
wine_dir=build/measure-debug-mode
scripts/wine-prefix.sh "$wine_dir" setup >&2
trap 'scripts/wine-prefix.sh "$wine_dir" cleanup >/dev/null' EXIT

source scripts/paired-runs.sh
# debug_mode_ms A|B WORKLOAD...: one process, release (A) or debug mode at stack depth $depth (B).
debug_mode_ms() {
    local variant=$1; shift
    case "$variant" in
        A) env FM5_DEBUG=0 scripts/wine-run.sh "$wine_dir" "$out/alloc_free_loop.exe" "$@" ;;
        B) env FM5_DEBUG=1 FM5_STACK_DEPTH="$depth" scripts/wine-run.sh "$wine_dir" "$out/alloc_free_loop.exe" "$@" ;;
    esac | awk '{print $3}' | tr -d '\r'
}
csv="$out/samples.csv"
echo "workload,pair,variant,milliseconds" > "$csv"
for depth in 0 20; do
    for w in "pair 64 1000000" "pair 4096 300000" "pair 65536 30000"; do
        name="$(echo "$w" | awk '{print $1 $2}')-depth$depth"
        # shellcheck disable=SC2086 # the workload is its words
        PAIRED_WARMUPS=2 paired_runs "$csv" "$name" "$pairs" debug_mode_ms $w
    done
done
python3 bench/paired_ratio.py "$csv"
