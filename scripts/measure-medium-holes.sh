#!/usr/bin/env bash
# What fm5's medium blocks leave free under st_realloc_use's loop, round by round: builds the shipped
# DLL (preset <arch>) and bench/medium_holes.c against it, and runs that program once under Wine.
# Not a timing: the free medium bytes and the address space fm5 holds are the same in every run of
# one build (one thread, a fixed size sequence); the peak working set follows them.
#   scripts/measure-medium-holes.sh [win32|win64] [rounds]      (default: win64, 4 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/paired-runs.sh
. scripts/paired-runs.sh

arch=${1:-win64}
rounds=${2:-4}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [win32|win64] [rounds]" >&2; exit 2; }
paired_arch "$arch"
bash scripts/setup.sh
cmake --preset "$arch" >/dev/null
cmake --build --preset "$arch" --target fm5 >/dev/null
bin=build/$arch/bin
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -Ibench -o "$bin/medium_holes.exe" bench/medium_holes.c \
    "$bin/fm5_$bits.dll" -lpsapi
echo "$0 $arch $rounds at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' (src changed)')"
scripts/wine-run.sh "build/$arch" "$bin/medium_holes.exe" "$rounds"
