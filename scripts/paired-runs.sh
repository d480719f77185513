# What the paired A/B measurements (scripts/measure-*.sh) share; sourced, run from the repository root.
# The method is the seeds': after warm-ups, A and B run in alternation (A first in odd pairs), each sample
# a fresh process; bench/paired_ratio.py turns the samples into medians and B's gain over A.
# shellcheck shell=bash

# paired_arguments "$@": the measure scripts' arguments [win32|win64|both] [pairs] (defaults win64 and
# 25); sets the array arches and pairs, or prints the usage and exits 2.
paired_arguments() {
    local usage="usage: $0 [win32|win64|both] [pairs]"
    case "${1:-win64}" in
        win32 | win64) arches=("${1:-win64}") ;;
        both) arches=(win32 win64) ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
    pairs=${2:-25}
    [[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "$usage" >&2; exit 2; }
}

# paired_build_variants DIR PRESET_A PRESET_B: for each architecture of arches, builds the two presets
# ({arch} in a name stands for the architecture) into DIR/<preset>, copies their DLLs to
# DIR/runs/<arch>/A and B and B's fm5bench.exe (which loads the DLL an allocator spec names) to
# DIR/runs/<arch>, and describes each variant in the associative array description[<arch>A|B], which
# the caller declares.
paired_build_variants() {
    local dir=$1 preset_a=$2 preset_b=$3 preset tree v
    for arch in "${arches[@]}"; do
        paired_arch "$arch"
        for v in A B; do
            if [ "$v" = A ]; then preset=${preset_a//'{arch}'/$arch}; else preset=${preset_b//'{arch}'/$arch}; fi
            tree=$dir/$preset
            paired_build_preset "$preset" "$tree" fm5 fm5bench
            mkdir -p "$dir/runs/$arch/$v"
            cp "$tree/bin/fm5_$bits.dll" "$dir/runs/$arch/$v/"
            description[$arch$v]="$preset ($(paired_preset_options "$tree"))"
        done
        cp "$tree/bin/fm5bench.exe" "$dir/runs/$arch/"
    done
}

# paired_arch win32|win64: sets arch, cc (the MinGW compiler) and bits for the architecture.
paired_arch() {
    arch=$1
    case "$1" in
        win32) cc=i686-w64-mingw32-gcc bits=32 ;;
        win64) cc=x86_64-w64-mingw32-gcc bits=64 ;;
        *) echo "paired-runs: unknown architecture '$1' (win32, win64)" >&2; return 2 ;;
    esac
}

# paired_header COMMAND [ARGS...]: the command line, the machine and the source version, to open the output.
paired_header() {
    local cpu
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
    printf 'Command:'
    printf ' %q' "$@"
    echo
    echo "Machine: nproc $(nproc), CPU ${cpu:-unknown}, $(wine --version), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "Source: $(git describe --always --dirty 2>/dev/null || echo unknown), $(date '+%Y-%m-%d %H:%M:%S')"
}

# paired_build_preset PRESET TREE TARGET...: configures TREE from PRESET and builds the targets. It
# configures every time (a second or two) so that the tree always has the preset's current options.
paired_build_preset() {
    local preset=$1 tree=$2
    shift 2
    echo "paired-runs: building preset $preset in $tree ($*)" >&2
    cmake --preset "$preset" -B "$tree" >&2
    cmake --build "$tree" --target "$@" >&2
}

# paired_preset_options TREE: the fm5 options the tree was configured with, e.g. "FM5_ASM=OFF FM5_SSE2_CHECKER=ON".
paired_preset_options() {
    sed -n 's/^\(FM5_[A-Z0-9_]*\):BOOL=\(.*\)$/\1=\2/p' "$1/CMakeCache.txt" | sort | tr '\n' ' ' | sed 's/ $//'
}

# paired_build_alloc_free_loop DIR: builds DIR/alloc_free_loop.exe linked with the fm5_<bits>.dll in DIR
# (uses cc and bits of paired_arch).
paired_build_alloc_free_loop() {
    "$cc" -std=c11 -O2 -Wall -Wextra -Werror -Isrc -o "$1/alloc_free_loop.exe" bench/alloc_free_loop.c \
        "$1/fm5_$bits.dll"
}

# paired_alloc_free_loop_runs CSV PAIRS WINE_DIR DIR WORKLOAD...: writes CSV's header, then paired_runs of
# each workload of bench/alloc_free_loop.c ("pair 16 30000000", "ring 15000000": its arguments) with
# DIR/A/alloc_free_loop.exe against DIR/B/alloc_free_loop.exe, under the Wine prefix of WINE_DIR. A
# workload is named pair<size> or ring in the CSV.
paired_alloc_free_loop_runs() {
    local csv=$1 pairs=$2 wine_dir=$3 dir=$4 w name words
    shift 4
    echo "workload,pair,variant,milliseconds" >"$csv"
    for w in "$@"; do
        read -r -a words <<<"$w"
        name=${words[0]}
        [ "$name" = pair ] && name=pair${words[1]}
        paired_runs "$csv" "$name" "$pairs" paired_alloc_free_loop_ms "$wine_dir" "$dir" "${words[@]}"
    done
}

# paired_alloc_free_loop_ms VARIANT WINE_DIR DIR WORKLOAD...: runs DIR/VARIANT/alloc_free_loop.exe once,
# prints its milliseconds.
paired_alloc_free_loop_ms() {
    local variant=$1 wine_dir=$2 dir=$3
    shift 3
    scripts/wine-run.sh "$wine_dir" "$dir/$variant/alloc_free_loop.exe" "$@" | awk '{print $3}' | tr -d '\r'
}

# paired_runs CSV NAME PAIRS RUN [ARGS...]: PAIRED_WARMUPS (default 3) unrecorded rounds, then PAIRS
# alternating pairs; `RUN A|B ARGS...` runs one fresh process and prints its milliseconds. Appends
# "NAME,pair,variant,milliseconds" lines to CSV; progress goes to stderr.
paired_runs() {
    local csv=$1 name=$2 pairs=$3 i first second t1 t2
    shift 3
    for ((i = 1; i <= ${PAIRED_WARMUPS:-3}; i++)); do
        paired_sample "$name" A "$@" >/dev/null
        paired_sample "$name" B "$@" >/dev/null
        printf '\r%s: warm-up %d of %d ' "$name" "$i" "${PAIRED_WARMUPS:-3}" >&2
    done
    for ((i = 1; i <= pairs; i++)); do
        # Alternate which variant goes first so that drift over time does not favour either.
        if ((i % 2)); then first=A second=B; else first=B second=A; fi
        t1=$(paired_sample "$name" "$first" "$@")
        t2=$(paired_sample "$name" "$second" "$@")
        echo "$name,$i,$first,$t1" >>"$csv"
        echo "$name,$i,$second,$t2" >>"$csv"
        printf '\r%s: pair %d of %d   ' "$name" "$i" "$pairs" >&2
    done
    echo >&2
}

# paired_sample NAME VARIANT RUN [ARGS...]: one sample, `RUN VARIANT ARGS...`, checked to be a number.
paired_sample() {
    local name=$1 variant=$2 run=$3 ms
    shift 3
    # A failure inside $(...) would not stop the script by itself: bash does not pass -e into it.
    if ! ms=$("$run" "$variant" "$@") || [[ ! $ms =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
        echo "paired-runs: $name, variant $variant: the run failed or printed '$ms' instead of milliseconds" >&2
        exit 1
    fi
    echo "$ms"
}

# paired_windows_path PATH: PATH as Wine's programs see it (Wine maps / to drive Z:).
paired_windows_path() {
    local path
    path=$(realpath "$1")
    echo "Z:${path//\//\\}"
}

# paired_fm5bench_compare CSV WINE_DIR DIR WORKLOADS PAIRS SCALE: bench/run.py --compare of
# DIR/A/fm5_<bits>.dll against DIR/B/fm5_<bits>.dll, run by DIR/fm5bench.exe under the Wine prefix of
# WINE_DIR (uses arch and bits of paired_arch): PAIRED_WARMUPS (default 3) warm-ups, then PAIRS
# alternating pairs of WORKLOADS (run.py's comma list) at fm5bench --scale SCALE. run.py's own report
# stays in DIR/results; CSV gets the samples in paired_ratio.py's form. A failed sample is an error.
paired_fm5bench_compare() {
    local csv=$1 wine_dir=$2 dir=$3 workloads=$4 pairs=$5 scale=$6 spec_a spec_b
    spec_a="fm5:$(paired_windows_path "$dir/A/fm5_$bits.dll")"
    spec_b="fm5:$(paired_windows_path "$dir/B/fm5_$bits.dll")"
    python3 bench/run.py --compare "$spec_a,$spec_b" --arch "$arch" --workloads "$workloads" \
        --pairs "$pairs" --warmups "${PAIRED_WARMUPS:-3}" --scale "$scale" --out "$dir/results" \
        --bench-cmd "scripts/wine-run.sh $wine_dir $dir/fm5bench.exe" >/dev/null
    python3 - "$dir/results" "$spec_a" >"$csv" <<'EOF'
import csv
import json
import os
import sys
failures = json.load(open(os.path.join(sys.argv[1], "meta.json")))["failures"]
for f in failures:
    print(f"paired-runs: {f['workload']} {f['allocator']}: {f['error']}", file=sys.stderr)
if failures:
    sys.exit(1)
print("workload,pair,variant,milliseconds")
for row in csv.DictReader(open(os.path.join(sys.argv[1], "results.csv"), newline="")):
    variant = "A" if row["allocator"] == sys.argv[2] else "B"
    print(f"{row['workload']},{row['round']},{variant},{row['ms']}")
EOF
}
