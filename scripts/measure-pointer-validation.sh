#!/usr/bin/env bash
# Prices fm5's pointer validation on the free path (address map + block-boundary checks) against a build
# that trusts the status word as FastMM5 does. Paired A/B processes in alternation, each sample a fresh
# process; A = trusting build, B = the shipped (validating) build. A negative gain is the cost.
#   scripts/measure-pointer-validation.sh [win32|win64] [pairs]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/paired-runs.sh
. scripts/paired-runs.sh
arch=${1:-win64}
pairs=${2:-25}
case "$arch" in
    win32) model= ;;
    win64) model=-mcmodel=small ;;
    *) echo "usage: $0 [win32|win64] [pairs]" >&2; exit 2 ;;
esac
paired_arch "$arch"
bash scripts/setup.sh
out=build/measure-pointer-validation/$arch
mkdir -p "$out/A" "$out/B"
flags=(-std=c11 -O2 $model ${EXTRA_CFLAGS:-} -Wall -Wextra -Werror -fno-strict-aliasing -DFM5_BUILDING_DLL
       -DFM5_ASM=0 -DFM5_CHECKED=0 -shared -static-libgcc)
# A: the trusting build, whose pointer checks come from scripts/measure/trusting/ (found first).
"$cc" "${flags[@]}" -Iscripts/measure/trusting -Isrc -Iinclude -o "$out/A/fm5_$bits.dll" src/*/*.c "win$bits/fm5_$bits.def"
"$cc" "${flags[@]}" -Isrc -Iinclude -o "$out/B/fm5_$bits.dll" src/*/*.c "win$bits/fm5_$bits.def"
for v in A B; do
    paired_build_alloc_free_loop "$out/$v"
done
wine_dir=build/measure-pointer-validation
scripts/wine-prefix.sh "$wine_dir" setup >&2
trap 'scripts/wine-prefix.sh "$wine_dir" cleanup >/dev/null' EXIT

workloads=("pair 16 20000000" "pair 64 20000000" "pair 1024 20000000" "ring 10000000")
csv="$out/samples.csv"
paired_alloc_free_loop_runs "$csv" "$pairs" "$wine_dir" "$out" "${workloads[@]}"
python3 bench/paired_ratio.py "$csv"
