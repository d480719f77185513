#!/usr/bin/env bash
# Prices the SSE2 freed-pattern checker with the seed benchmark: debug mode, stack traces off (depth 0),
# allocate and free one block of 64 B (the control: its checks are short), 128 B, 1 KiB, 4 KiB and 64 KiB
# (fm5bench's debug_64, debug_128, debug_1k, debug_4k, debug_64k). A = NASM DLL without the SSE2 checker
# (preset <arch>-scalar-checker), B = NASM DLL with it (preset <arch>, the shipped build). bench/run.py
# --compare runs them: 3 warm-ups, then A and B in alternation (A first in odd pairs), each sample a fresh
# process under Wine; the table gives the medians and B's gain over A with a bootstrap 95 % interval.
#   scripts/measure-sse2-checker.sh [win32|win64|both] [pairs]      (default: win64, 25 pairs)
# PRESET_A and PRESET_B override the presets ({arch} stands for win32 or win64; defaults
# '{arch}-scalar-checker' and '{arch}'): PRESET_A='{arch}-c' PRESET_B='{arch}-c' gives an A/A run of the
# pure-C DLL against itself, which checks the pipeline and shows the noise floor. SCALE overrides
# fm5bench's --scale (default 3), PAIRED_WARMUPS the 3 warm-ups, WORKLOADS the workloads (run.py's
# comma list; scripts/measure-memset-fills.sh and the XML-like run use it).
# Output on stdout: the command line, the machine, the presets and one table per architecture. Samples:
# build/measure-sse2-checker/runs/<arch>/samples.csv, with run.py's own report in results/ beside it;
# build trees: build/measure-sse2-checker/<preset>; Wine prefix: build/measure-sse2-checker/wineprefix.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/paired-runs.sh
. scripts/paired-runs.sh

paired_arguments "$@"
preset_a=${PRESET_A:-'{arch}-scalar-checker'}
preset_b=${PRESET_B:-'{arch}'}
# At scale 1 the loops take 0.12-0.25 s under Wine on the project's 2-core VM (pure-C DLL); at scale 3
# a process takes about 0.4-0.8 s, Wine's start included: 5 workloads x (3 + 25) pairs come to about
# 4 minutes per architecture.
scale=${SCALE:-3}
workloads=${WORKLOADS:-debug_64,debug_128,debug_1k,debug_4k,debug_64k}

bash scripts/setup.sh
paired_header "$0" "$@"
dir=build/measure-sse2-checker
declare -A description
paired_build_variants "$dir" "$preset_a" "$preset_b"

scripts/wine-prefix.sh "$dir" setup >&2
trap 'scripts/wine-prefix.sh "$dir" cleanup >/dev/null' EXIT

for arch in "${arches[@]}"; do
    paired_arch "$arch"
    out=$dir/runs/$arch
    csv=$out/samples.csv
    paired_fm5bench_compare "$csv" "$dir" "$out" "$workloads" "$pairs" "$scale"
    echo
    echo "## $arch: A = ${description[${arch}A]}, B = ${description[${arch}B]}"
    echo
    echo "$pairs pairs after ${PAIRED_WARMUPS:-3} warm-ups, fm5bench --scale $scale; samples: $csv"
    echo
    python3 bench/paired_ratio.py "$csv"
done
