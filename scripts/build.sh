#!/usr/bin/env bash
# Configures (once) and builds the given presets: build.sh win32 win64
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

for variant in "$@"; do
    # Configure only a tree that has never been generated: afterwards the build re-runs CMake by
    # itself whenever a CMakeLists.txt, preset or globbed directory changes.
    if [ ! -f "build/$variant/build.ninja" ]; then
        cmake --preset "$variant"
    fi
    cmake --build --preset "$variant"
done
