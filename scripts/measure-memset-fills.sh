#!/usr/bin/env bash
# Prices seed 000's memset fills with its benchmark: debug mode, stack traces off, allocate and free one
# block of 64 B (the control: below the 40-byte bulk size both builds store the same way), 4 KiB and
# 64 KiB. A = NASM DLL whose fills keep the scalar stores at every size (preset <arch>-scalar-fill,
# FM5_BULK_FILL=OFF, the seed's baseline), B = the shipped NASM DLL. The same machinery and output as
# scripts/measure-sse2-checker.sh, which this runs with other presets and workloads.
#   scripts/measure-memset-fills.sh [win32|win64|both] [pairs]      (default: win64, 25 pairs)
set -euo pipefail
cd "$(dirname "$0")/.."
export PRESET_A=${PRESET_A:-'{arch}-scalar-fill'} PRESET_B=${PRESET_B:-'{arch}'}
export WORKLOADS=${WORKLOADS:-debug_64,debug_4k,debug_64k}
exec scripts/measure-sse2-checker.sh "$@"
