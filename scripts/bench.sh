#!/usr/bin/env bash
# Entry point of `make bench`: installs what the runner needs, builds with make, runs bench/run.py.
#   scripts/bench.sh [bench/run.py options]      (see `python3 bench/run.py --help`)
#   make bench BENCH_ARGS="--arch win64 --workloads 'st_*' --pairs 9"
# Environment:
#   FM5_BENCH_SKIP_BUILD=1   do not run make (the runner still checks that fm5bench.exe exists)
#   FM5_BENCH_CMD="..."      run another benchmark program instead of fm5bench.exe under Wine
#                            (a command template, {arch} is replaced; used to test the runner)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Debian's interpreter: python3-matplotlib installs there, not into a python3 that another
# installation (pyenv, /usr/local) may put first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

if [ -z "${FM5_BENCH_SKIP_BUILD:-}" ]; then
    # `make` runs scripts/setup.sh (MinGW, Wine, Python 3) and builds both architectures.
    make --no-print-directory all >&2
fi

if ! "$PY" -c 'import matplotlib' >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "bench: run as root or install sudo (python3-matplotlib)" >&2; exit 1; }
        SUDO=sudo
    fi
    echo "bench: installing python3-matplotlib ..." >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! $SUDO apt-get install -y -qq --no-install-recommends python3-matplotlib >&2; then
        # A stale package index: refresh it (exit 100 = one index failed, the rest is usable).
        set +e
        $SUDO apt-get update -qq >&2
        rc=$?
        set -e
        if [ "$rc" != 0 ] && [ "$rc" != 100 ]; then
            echo "bench: apt-get update failed with $rc" >&2
            exit "$rc"
        fi
        $SUDO apt-get install -y -qq --no-install-recommends python3-matplotlib >&2
    fi
fi

exec "$PY" bench/run.py "$@"
