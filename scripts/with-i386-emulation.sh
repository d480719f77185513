#!/usr/bin/env bash
# Runs one command with 32-bit x86 programs emulated by qemu-user, on a machine whose kernel refuses
# them (scripts/wine-env.sh's fm5_i386_runs says no: Wine's i386 loader gets "Exec format error").
# Usage: scripts/with-i386-emulation.sh COMMAND [ARGS...]
#   e.g. scripts/with-i386-emulation.sh scripts/wine-run.sh build/win32 build/win32/bin/test_asm_twins.exe
#
# How: the kernel hands an executable that no built-in loader takes to binfmt_misc, so an i386 ELF
# entry there naming qemu-i386-static makes Wine's 32-bit loader (and every i386 process it starts)
# run under emulation. The entry is made for the command alone and removed when it ends, however it
# ends: while it exists, fm5_i386_runs says yes, and `make test` (scripts/run-tests.sh) would run the
# whole Win32 suite under emulation, which this tool is not for.
#
# What it is good for (2026-12-05, the 2-core AMD EPYC VM, Wine 8.0, qemu 7.2): single-threaded Win32
# programs, 50 to 150 s each, most of it Wine's start-up under emulation. Of the 55 Wine programs of
# `scripts/run-tests.sh win32` at afc5c9d, 34 passed - test_asm_twins (every asm routine against its C
# twin), test_realloc_rules, test_integrity, test_bad_input, the debug-mode, stack-trace, import-library
# and BorlndMM tests among them - and 20 failed, each in a section that runs threads (qemu: "uncaught
# target signal 11", or Wine's "write: Bad file descriptor"); test_multithread of 4275a32, whose Win32
# suite passed on a machine that runs i386 code natively, fails the same way. test_debug_mode, which
# starts two threads, passed there but crashed after its last check in all six later runs (four of
# 58b294d, two of afc5c9d). So a failure with threads here says nothing about fm5, and times nothing
# about speed.
# Needs root (binfmt_misc) and installs qemu-user-static when it is missing.
set -euo pipefail

if [ $# -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/wine-env.sh
. scripts/wine-env.sh

if fm5_i386_runs; then
    # Native (or already emulated): nothing to set up, and nothing of anyone else's to remove.
    exec "$@"
fi

binfmt=/proc/sys/fs/binfmt_misc
entry=fm5-qemu-i386
qemu=/usr/bin/qemu-i386-static
if [ ! -x "$qemu" ]; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-user-static >/dev/null
fi
if [ ! -e "$binfmt/register" ]; then
    mount -t binfmt_misc binfmt_misc "$binfmt"
fi
if [ -e "$binfmt/$entry" ]; then
    echo "with-i386-emulation: $binfmt/$entry exists but i386 programs still do not run" >&2
    exit 1
fi

# The ELF header of a 32-bit little-endian x86 executable or shared object (e_type 2 or 3, e_machine
# 3); 'F' opens the interpreter now, so that it serves inside other mount namespaces and chroots too.
magic='\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x03\x00'
mask='\xff\xff\xff\xff\xff\xfe\xfe\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
printf ':%s:M::%s:%s:%s:F\n' "$entry" "$magic" "$mask" "$qemu" >"$binfmt/register"
trap 'echo -1 >"$binfmt/$entry" 2>/dev/null || true' EXIT
if ! fm5_i386_runs; then
    echo "with-i386-emulation: Wine's i386 loader does not run even under $qemu" >&2
    exit 1
fi
status=0
"$@" || status=$?
exit "$status"
