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
