#!/bin/sh
# CMAKE_CROSSCOMPILING_EMULATOR of the MinGW toolchains.
# Usage: wine-run.sh BUILD_DIR PROGRAM.exe [ARGS...]
# The toolchain passes BUILD_DIR so that the prefix lives inside the build tree.
set -eu
# shellcheck source=scripts/wine-env.sh
. "$(dirname "$0")/wine-env.sh"
fm5_wine_env "${1:-}"
shift
# Debian's `wine` is the 32-bit loader when wine32 is installed. Given a 64-bit program it does not
# run it: it runs start.exe /exec, which creates the program as a second process inside a job
# object, waits for it and exits with its code. That relay costs a process start per run (0.25 s
# against 0.09 s a run, measured 2026-12-03) and adds a process whose end kills the program with
# it (CI saw a Win64 fm5bench run end with exit code 1 and no output at all, once in some 5,000
# runs). A 64-bit program therefore goes straight to the 64-bit loader when it is there.
pe_machine() { # file: prints the PE header's machine field in hex (8664 for x86-64), or nothing
    offset=$(od -An -t u4 -j 60 -N 4 "$1" 2>/dev/null | tr -d ' ') || return 0
    [ -n "$offset" ] || return 0
    od -An -t x2 -j $((offset + 4)) -N 2 "$1" 2>/dev/null | tr -d ' '
}
# The Linux pid that the program keeps through the exec into Wine's loader: fm5bench reads its page
# faults from /proc/<pid>/stat (bench/bench_util.c), since Wine resolves /proc/self in its server.
FM5_WINE_UNIX_PID=$$
export FM5_WINE_UNIX_PID
if [ -x /usr/lib/wine/wine64 ] && [ -f "${1:-}" ] && [ "$(pe_machine "$1")" = 8664 ]; then
    WINELOADER=/usr/lib/wine/wine64
    export WINELOADER
    exec /usr/lib/wine/wine64 "$@"
fi
if ! fm5_i386_runs; then
    echo "wine-run: this machine cannot execute 32-bit x86 programs (the kernel refuses Wine's i386" \
         "loader, or wine32 is not installed): ${1:-} not run" >&2
    exit 126
fi
exec wine "$@"
