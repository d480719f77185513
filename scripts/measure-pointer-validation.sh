#!/usr/bin/env bash
# Prices fm5's pointer validation on the free path (address map + block-boundary checks) against a build
# that trusts the status word as FastMM5 does. Paired A/B processes in alternation, each sample a fresh
# process; A = trusting build, B = the shipped (validating) build. A negative gain is the cost.
#   scripts/measure-pointer-validation.sh [win32|win64] [pairs]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-win64}
pairs=${2:-25}
case "$arch" in
    win32) cc=i686-w64-mingw32-gcc bits=32 model= ;;
    win64) cc=x86_64-w64-mingw32-gcc bits=64 model=-mcmodel=small ;;
    *) echo "usage: $0 [win32|win64] [pairs]" >&2; exit 2 ;;
esac
bash scripts/setup.sh
out=build/measure-pointer-validation/$arch
mkdir -p "$out/A" "$out/B"
flags=(-std=c11 -O2 $model ${EXTRA_CFLAGS:-} -Wall -Wextra -Werror -fno-strict-aliasing -DFM5_BUILDING_DLL -shared -static-libgcc)
"$cc" "${flags[@]}" -DFM5_MEASURE_WITHOUT_POINTER_VALIDATION -o "$out/A/fm5_$bits.dll" src/*.c "win$bits/fm5_$bits.def"
"$cc" "${flags[@]}" -o "$out/B/fm5_$bits.dll" src/*.c "win$bits/fm5_$bits.def"
for v in A B; do
    "$cc" -std=c11 -O2 -Wall -Wextra -Werror -Isrc -o "$out/$v/alloc_free_loop.exe" bench/alloc_free_loop.c \
        "$out/$v/fm5_$bits.dll"
done
wine_dir=build/measure-pointer-validation
scripts/wine-prefix.sh "$wine_dir" setup >&2
trap 'scripts/wine-prefix.sh "$wine_dir" cleanup >/dev/null' EXIT

workloads=("pair 16 20000000" "pair 64 20000000" "pair 1024 20000000" "ring 10000000")
run() { scripts/wine-run.sh "$wine_dir" "$out/$1/alloc_free_loop.exe" $2 | awk '{print $3}' | tr -d '\r'; }
csv="$out/samples.csv"
echo "workload,pair,variant,milliseconds" > "$csv"
for w in "${workloads[@]}"; do
    name=$(echo "$w" | awk '{print ($1=="pair") ? "pair" $2 : $1}')
    for _ in 1 2 3; do run A "$w" >/dev/null; run B "$w" >/dev/null; done
    for i in $(seq 1 "$pairs"); do
        # Alternate which variant goes first so that drift over time does not favour either.
        if (( i % 2 )); then first=A second=B; else first=B second=A; fi
        t1=$(run $first "$w"); t2=$(run $second "$w")
        echo "$name,$i,$first,$t1" >> "$csv"
        echo "$name,$i,$second,$t2" >> "$csv"
        printf '\r%s: pair %d of %d' "$name" "$i" "$pairs" >&2
    done
    echo >&2
done
python3 bench/paired_ratio.py "$csv"
