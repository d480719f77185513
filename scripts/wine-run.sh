#!/bin/sh
# CMAKE_CROSSCOMPILING_EMULATOR of the MinGW toolchains.
# Usage: wine-run.sh BUILD_DIR PROGRAM.exe [ARGS...]
# The toolchain passes BUILD_DIR so that the prefix lives inside the build tree.
set -eu
# shellcheck source=scripts/wine-env.sh
. "$(dirname "$0")/wine-env.sh"
fm5_wine_env "${1:-}"
shift
exec wine "$@"
