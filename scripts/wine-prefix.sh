#!/bin/sh
# The CTest fixture "wine": creates BUILD_DIR/wineprefix once and keeps one wineserver alive for
# the whole test run, so that each test does not pay for starting and stopping a server.
# Usage: wine-prefix.sh BUILD_DIR setup|cleanup
set -eu
. "$(dirname "$0")/wine-env.sh"
fm5_wine_env "${1:-}"
action=${2:-}

case "$action" in
setup)
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        # Build the prefix aside and rename it when complete: an interrupted wineboot then
        # cannot leave a half-made prefix that later runs would take as ready.
        final=$WINEPREFIX
        WINEPREFIX=$final.partial
        rm -rf "$WINEPREFIX"
        echo "wine-prefix: creating $final"
        wineboot -i
        # The prefix may be renamed only once its server has written everything and gone.
        wineserver -w
        rm -rf "$final"
        mv "$WINEPREFIX" "$final"
        WINEPREFIX=$final
    fi
    # The server daemonizes but keeps the descriptors it was given: were they CTest's pipes,
    # CTest would wait for them to close until the test's timeout.
    wineserver -p >"$WINEPREFIX/../wineserver.log" 2>&1 </dev/null
    echo "wine-prefix: $WINEPREFIX ready, persistent wineserver started"
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
