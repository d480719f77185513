#!/usr/bin/env bash
# Prices the NASM fast paths: A = the pure-C DLL (preset <arch>-c, FM5_ASM=OFF), B = the NASM DLL (preset
# <arch>, the shipped build), on malloc+free loops of bench/alloc_free_loop.c. Paired A/B processes in
# alternation (A first in odd pairs), each sample a fresh process under Wine, 3 warm-ups per workload;
# bench/paired_ratio.py gives the medians and B's gain over A with a bootstrap 95 % interval. A positive
# gain is what the NASM paths win.
#   scripts/measure-asm.sh [win32|win64|both] [pairs]      (default: win64, 25 pairs)
# PRESET_A and PRESET_B override the presets ({arch} stands for win32 or win64; defaults '{arch}-c' and
# '{arch}'): PRESET_B='{arch}-c' gives an A/A run of the pure-C DLL against itself, which checks the
# pipeline and shows the noise floor. PAIRED_WARMUPS overrides the 3 warm-ups.
# Output on stdout: the command line, the machine, the presets and one table per architecture. Samples:
# build/measure-asm/runs/<arch>/samples.csv; build trees: build/measure-asm/<preset>; Wine prefix:
# build/measure-asm/wineprefix.
# FM5BENCH_PAIRS=N (default 0: not run) adds, per architecture, the fm5bench release workloads (all but
# debug mode and the echo servers) as N alternating pairs through bench/run.py --compare, at
# FM5BENCH_SCALE (default 0.1): the broad view of where the asm wins, ties or loses.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/paired-runs.sh
. scripts/paired-runs.sh

paired_arguments "$@"
preset_a=${PRESET_A:-'{arch}-c'}
preset_b=${PRESET_B:-'{arch}'}

# Each process takes about 0.4-0.6 s under Wine on the project's 2-core VM with the pure-C DLL (the
# loop itself 0.36-0.64 s, Wine's start about 0.05 s with the persistent wineserver): 5 workloads x
# (3 + 25) pairs come to about 3 minutes per architecture. pairN = N-byte malloc, touch, free; ring =
# free a random slot of a 1024-block ring and allocate a new block (80 % 1-256 B, 15 % up to 2622 B,
# 5 % medium up to 64 KB). 4096 B is a medium block.
workloads=("pair 16 30000000" "pair 64 30000000" "pair 1024 30000000" "pair 4096 15000000" "ring 15000000")
fm5bench_pairs=${FM5BENCH_PAIRS:-0}
fm5bench_scale=${FM5BENCH_SCALE:-0.1}
fm5bench_workloads='realloc_*,small_upsize,tiny_downsize,verysmall_downsize,address_space_creep*,large_block_spread,st_*,mt_*,raw_perf_*,allocmem,validate*,larson,xmalloc,cache_scratch,glibc_simple,malloc_large'

bash scripts/setup.sh
paired_header "$0" "$@"
dir=build/measure-asm
declare -A description
paired_build_variants "$dir" "$preset_a" "$preset_b"
for arch in "${arches[@]}"; do
    paired_arch "$arch"
    for v in A B; do
        paired_build_alloc_free_loop "$dir/runs/$arch/$v"
    done
done

scripts/wine-prefix.sh "$dir" setup >&2
trap 'scripts/wine-prefix.sh "$dir" cleanup >/dev/null' EXIT

for arch in "${arches[@]}"; do
    out=$dir/runs/$arch
    csv=$out/samples.csv
    echo "measure-asm: $arch, $pairs pairs" >&2
    paired_alloc_free_loop_runs "$csv" "$pairs" "$dir" "$out" "${workloads[@]}"
    echo
    echo "## $arch: A = ${description[${arch}A]}, B = ${description[${arch}B]}"
    echo
    echo "$pairs pairs after ${PAIRED_WARMUPS:-3} warm-ups; samples: $csv"
    echo
    python3 bench/paired_ratio.py "$csv"
done
if ((fm5bench_pairs > 0)); then
    for arch in "${arches[@]}"; do
        paired_arch "$arch"
        out=$dir/runs/$arch
        csv=$out/fm5bench-samples.csv
        echo "measure-asm: $arch, fm5bench release workloads, $fm5bench_pairs pairs" >&2
        paired_fm5bench_compare "$csv" "$dir" "$out" "$fm5bench_workloads" "$fm5bench_pairs" "$fm5bench_scale"
        echo
        echo "## $arch, fm5bench release workloads: A = ${description[${arch}A]}, B = ${description[${arch}B]}"
        echo
        echo "$fm5bench_pairs pairs after ${PAIRED_WARMUPS:-3} warm-ups, fm5bench --scale $fm5bench_scale; samples: $csv"
        echo
        python3 bench/paired_ratio.py "$csv"
    done
fi
