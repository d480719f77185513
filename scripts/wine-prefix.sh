#!/bin/sh
# The CTest fixture "wine": creates BUILD_DIR/wineprefix once and keeps one wineserver alive for
# the whole test run, so that each test does not pay for starting and stopping a server.
# Usage: wine-prefix.sh BUILD_DIR setup|cleanup
set -eu
# shellcheck source=scripts/wine-env.sh
. "$(dirname "$0")/wine-env.sh"
fm5_wine_env "${1:-}"
action=${2:-}

case "$action" in
setup)
    log=$FM5_BUILD_DIR/wine.log
    : >"$log"
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        # Build the prefix aside and rename it when complete: an interrupted wineboot then
        # cannot leave a half-made prefix that later runs would take as ready.
        final=$WINEPREFIX
        WINEPREFIX=$final.partial
        rm -rf "$WINEPREFIX"
        echo "wine-prefix: creating $final"
        if ! fm5_wine_tool wineboot -i >>"$log" 2>&1 </dev/null; then
            cat "$log" >&2
            # A prefix takes about 1.3 GB and a full run makes one per variant: a full disk shows
            # only as "could not load kernel32.dll" (seen in CI, 2026-12-04).
            echo "wine-prefix: wineboot failed; free space where the prefix goes:" >&2
            df -h "$FM5_BUILD_DIR" >&2 || true
            exit 1
        fi
        # The prefix may be renamed only once its server has written everything and gone.
        wineserver -w
        rm -rf "$final"
        mv "$WINEPREFIX" "$final"
        WINEPREFIX=$final
    fi
    # A server left by an interrupted run would refuse a second one (and might not be persistent).
    wineserver -k 2>/dev/null || true
    wineserver -w
    # The server and Wine's system processes (services.exe, winedevice.exe, rpcss.exe, ...) outlive
    # the program that started them and keep the descriptors it had: were those CTest's pipes, CTest
    # would wait on them until the timeout. So start them all here, writing to a file. With -p they
    # stay up for the whole run and no test starts them again.
    wineserver -p >>"$log" 2>&1 </dev/null
    fm5_wine_tool wineboot >>"$log" 2>&1 </dev/null
    echo "wine-prefix: $WINEPREFIX ready, persistent wineserver started (log: $log)"
    ;;
cleanup)
    # -k fails when no server runs (it may never have started); that is no error for cleanup.
    wineserver -k 2>/dev/null || true
    wineserver -w 2>/dev/null || true
    echo "wine-prefix: wineserver stopped"
    ;;
*)
    echo "usage: $0 BUILD_DIR setup|cleanup" >&2
    exit 2
    ;;
esac
