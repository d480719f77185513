#!/usr/bin/env bash
# Runs one command with 32-bit x86 programs emulated by qemu-user, on a machine whose kernel refuses
# them (scripts/wine-env.sh's fm5_i386_runs says no: Wine's i386 loader gets "Exec format error").
# Usage: scripts/with-i386-emulation.sh COMMAND [ARGS...]
#   e.g. scripts/with-i386-emulation.sh scripts/wine-run.sh build/win32 build/win32/bin/test_asm_twins.exe
#
# `make test` needs no help: scripts/run-tests.sh runs the Win32 variants under emulation itself.
# This is for anything else: one test program by hand, a debugger session, a probe. The binfmt_misc
# entry (fm5_i386_emulation_on, scripts/wine-env.sh) is made for the command alone and removed when
# it ends, however it ends: while it exists fm5_i386_runs says yes (bench/run.py checks for the
# entry and still refuses to time Win32: emulated times say nothing of speed). Needs root; installs
# qemu-user 10 or later (scripts/setup.sh) when it is missing.
#
# What emulation does (2026-12-06, the 2-core AMD EPYC VM, Wine 8.0, qemu-user 10.0.2 from
# bookworm-backports): `scripts/run-tests.sh win32` ran in 9 minutes, 59 of 61 tests passed, the
# threaded ones included; the two others (test_bad_pointer_race and its static twin) check fm5's
# recovery from an access violation, and under qemu-user Wine reports every fault on a released or
# protected page as an illegal instruction (run-tests.sh says more). Debian 12's own qemu 7.2 crashed
# every program that starts a thread, and took a minute or more per program.
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

if ! emulator=$(fm5_i386_emulator); then
    scripts/setup.sh
    emulator=$(fm5_i386_emulator) || { echo "with-i386-emulation: no qemu-i386 of release 10 or later" >&2; exit 1; }
fi
if ! fm5_i386_emulation_on "$emulator"; then
    echo "with-i386-emulation: could not register $emulator in $FM5_BINFMT ($FM5_BINFMT_ENTRY exists?)" >&2
    exit 1
fi
trap fm5_i386_emulation_off EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if ! fm5_i386_runs; then
    echo "with-i386-emulation: Wine's i386 loader does not run even under $emulator" >&2
    exit 1
fi
status=0
"$@" || status=$?
exit "$status"
