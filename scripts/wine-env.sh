# Sourced by wine-run.sh and wine-prefix.sh so that a test and the fixture that prepares its prefix
# always agree on the Wine environment.
# shellcheck shell=sh

fm5_wine_env() {
    if [ -z "${1:-}" ] || [ ! -d "$1" ]; then
        echo "wine: first argument must be an existing CMake build directory, got '${1:-}'" >&2
        exit 2
    fi
    # One prefix per build directory: the developer's ~/.wine is never touched, and two variants
    # (or two checkouts) never share a wineserver.
    FM5_BUILD_DIR=$(cd "$1" && pwd)
    WINEPREFIX=$FM5_BUILD_DIR/wineprefix
    export WINEPREFIX
    WINEDEBUG=-all
    export WINEDEBUG
    # Without network, the Mono and Gecko installers would only stall wineboot; no test needs them.
    WINEDLLOVERRIDES="mscoree,mshtml="
    export WINEDLLOVERRIDES
    # Wine must not try to open windows: CI has no display and a console program needs none.
    unset DISPLAY WAYLAND_DISPLAY
}

# Can this machine run Win32 programs? Debian's 32-bit loader is an i386 Linux program, and some
# kernels refuse every i386 executable ("Exec format error"): seen on a PVM guest (2026-12-03), whose
# kernel runs no 32-bit user code. There only Win64 programs run, through /usr/lib/wine/wine64;
# scripts/run-tests.sh and bench/run.py then leave the Win32 programs unrun and say so. The answer
# is false too when wine32 is not installed.
fm5_i386_runs() {
    /usr/lib/wine/wine --version >/dev/null 2>&1
}

# Runs Wine's tools (wineboot) on a loader this machine can execute: Debian's `wine` is the 32-bit
# loader, so where that cannot run the 64-bit one serves (it builds the same 64-bit prefix; only
# the 32-bit half of its set-up, which nothing here could run anyway, fails with a message).
fm5_wine_tool() {
    if fm5_i386_runs || [ ! -x /usr/lib/wine/wine64 ]; then
        wine "$@"
    else
        WINELOADER=/usr/lib/wine/wine64 /usr/lib/wine/wine64 "$@"
    fi
}
