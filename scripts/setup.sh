#!/usr/bin/env bash
# Installs the cross toolchain and Wine that fm5's build and tests need, on Debian 12.
# Idempotent: it returns at once when every tool is present.
set -euo pipefail

need_install() {
    local tool
    for tool in x86_64-w64-mingw32-gcc i686-w64-mingw32-gcc nasm cmake ninja wine \
                llvm-dlltool lld-link clang python3; do
        command -v "$tool" >/dev/null 2>&1 || return 0
    done
    # Debian keeps both loaders off PATH; `wine` picks the one that matches the executable.
    [ -x /usr/lib/wine/wine64 ] || return 0
    [ -x /usr/lib/wine/wine ] || return 0
    dpkg -s wine32:i386 >/dev/null 2>&1 || return 0
    return 1
}

if ! need_install; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: run as root or install sudo" >&2; exit 1; }
    SUDO=sudo
fi

echo "setup: installing MinGW-w64, NASM, CMake, Wine (amd64 + i386), LLVM/lld ..." >&2
export DEBIAN_FRONTEND=noninteractive

if ! dpkg --print-foreign-architectures | grep -qx i386; then
    $SUDO dpkg --add-architecture i386
fi

# The i386 index of the security suite sometimes fails to download (size mismatch). Keep the
# security suite from outranking the main suite so that amd64 and i386 library versions agree.
pin=/etc/apt/preferences.d/fm5-security-pin
if [ ! -f "$pin" ]; then
    printf 'Package: *\nPin: release l=Debian-Security\nPin-Priority: 100\n' | $SUDO tee "$pin" >/dev/null
fi

# apt-get update exits 100 when one index fails; the remaining indexes are still usable.
set +e
$SUDO apt-get update -qq
rc=$?
set -e
if [ "$rc" != 0 ] && [ "$rc" != 100 ]; then
    echo "setup: apt-get update failed with $rc" >&2
    exit "$rc"
fi

# One transaction: naming the i386 gstreamer library lets apt resolve wine32 without removing wine64.
$SUDO apt-get install -y -qq --no-install-recommends \
    make cmake ninja-build python3 mingw-w64 nasm clang lld llvm \
    wine wine64 wine32:i386 libgstreamer-plugins-base1.0-0:i386 >/dev/null

if need_install; then
    echo "setup: some tools are still missing after installation" >&2
    exit 1
fi
echo "setup: done" >&2
