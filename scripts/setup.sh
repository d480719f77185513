#!/usr/bin/env bash
# Installs the cross toolchain and Wine that fm5's build and tests need, on Debian 12, then builds
# Free Pascal's Windows targets for the Pascal tests (scripts/setup-fpc.sh, into build/fpc).
# Idempotent: it returns at once when every tool is present.
set -euo pipefail
fpc_windows=$(dirname "${BASH_SOURCE[0]}")/setup-fpc.sh

need_install() {
    local tool
    for tool in x86_64-w64-mingw32-gcc i686-w64-mingw32-gcc nasm cmake ninja wine \
                llvm-dlltool llvm-nm lld-link clang python3 fpc ppcx64 fpcmake; do
        command -v "$tool" >/dev/null 2>&1 || return 0
    done
    # The Pascal tests: Debian's fpc targets Linux; setup-fpc.sh builds the Windows units from these.
    [ -f /usr/share/fpcsrc/3.2.2/rtl/win64/Makefile.fpc ] || return 0
    # Debian keeps both loaders off PATH; `wine` picks the one that matches the executable.
    [ -x /usr/lib/wine/wine64 ] || return 0
    [ -x /usr/lib/wine/wine ] || return 0
    dpkg -s wine32:i386 >/dev/null 2>&1 || return 0
    # The host-* variants: clang's sanitizer and libFuzzer runtimes (libclang-rt-14-dev).
    local runtime
    runtime=$(clang --print-runtime-dir 2>/dev/null) || return 0
    for library in asan ubsan_standalone tsan fuzzer; do
        [ -e "$runtime/libclang_rt.$library-x86_64.a" ] || return 0
    done
    return 1
}

SUDO=""
root_or_sudo() {
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "setup: run as root or install sudo" >&2; exit 1; }
        SUDO=sudo
    fi
}

# The emulator that runs the Win32 tests where the kernel refuses i386 programs (scripts/wine-env.sh,
# fm5_i386_emulator: qemu-user 10 or later; Debian 12 has 7.2, bookworm-backports 10). Wanted only
# where wine32 is installed and its loader does not run; nothing else here needs it.
need_i386_emulator() {
    # shellcheck source=scripts/wine-env.sh
    . "$(dirname "${BASH_SOURCE[0]}")/wine-env.sh"
    [ -x /usr/lib/wine/wine ] && ! fm5_i386_runs && ! fm5_i386_emulator >/dev/null
}

# Installs qemu-user from bookworm-backports (its own apt source, made once; backports never
# outrank the main suite, so nothing else comes from there). Not qemu-user-binfmt, which qemu-user
# recommends and which would register qemu for every i386 program for good (`make bench` would then
# time Win32 under emulation): not installed, and removed in the same transaction if present, with
# qemu-user-static, whose release 10 is an empty package that depends on it (an older
# with-i386-emulation.sh installed Debian 12's 7.2). A failure is no failure of the set-up: the
# Win32 tests are then left unrun, as run-tests.sh says.
install_i386_emulator() {
    root_or_sudo
    export DEBIAN_FRONTEND=noninteractive
    echo "setup: this kernel runs no i386 programs; installing qemu-user (bookworm-backports) for the Win32 tests" >&2
    local sources=/etc/apt/sources.list.d/fm5-bookworm-backports.sources
    if ! grep -qs '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
            /etc/apt/sources.list.d/*.sources; then
        printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' |
            $SUDO tee "$sources" >/dev/null
    fi
    local log rc
    log=$(mktemp)
    set +e
    $SUDO apt-get update -qq >"$log" 2>&1
    rc=$?
    if [ "$rc" = 0 ] || [ "$rc" = 100 ]; then
        $SUDO apt-get install -y -qq --no-install-recommends \
            -t bookworm-backports qemu-user qemu-user-binfmt- qemu-user-static- >"$log" 2>&1
        rc=$?
    fi
    set -e
    if [ "$rc" != 0 ] || need_i386_emulator; then
        tail -n 20 "$log" >&2
        echo "setup: warning: no qemu-user 10 or later; the Win32 tests will not run on this machine" >&2
    fi
    rm -f "$log"
}

if ! need_install; then
    if need_i386_emulator; then
        install_i386_emulator
    fi
    exec "$fpc_windows"
fi

root_or_sudo

echo "setup: installing MinGW-w64, NASM, CMake, Wine (amd64 + i386), LLVM/lld, clang's sanitizers, Free Pascal ..." >&2
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

export LC_ALL=C
i386_roots=(wine32:i386 libgstreamer-plugins-base1.0-0:i386)

# A Multi-Arch: same library must have one version on amd64 and on i386. An amd64 library that a
# fresh machine took from the security suite (git's libssl3, libexpat1, ...) has no i386 twin
# while that suite's i386 index is missing, and apt would then refuse wine32 ("held broken
# packages"). Ask for every such library that the i386 packages need at the version that both
# architectures have; on a machine where the versions already agree the list is empty.
mapfile -t needed < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${i386_roots[@]}" |
    sed -n 's/^\([^ <][^ ]*\):i386$/\1/p' | sort -u)
# The version of each of them that is installed on amd64 as Multi-Arch: same ...
declare -A amd64_version=()
if [ "${#needed[@]}" -gt 0 ]; then
    while read -r pkg ma status version; do
        [ "$ma" = same ] && [ "$status" = ii ] && amd64_version[$pkg]=$version
    done < <(dpkg-query -W -f='${Package} ${Multi-Arch} ${db:Status-Abbrev;2} ${Version}\n' \
                 "${needed[@]/%/:amd64}" 2>/dev/null)
fi
# ... and the version apt would install on i386 (one apt-cache call: each costs about a second).
align=()
same=("${!amd64_version[@]}")
if [ "${#same[@]}" -gt 0 ]; then
    while read -r pkg candidate; do
        installed=${amd64_version[$pkg]}
        if [ "$candidate" != "(none)" ] && [ "$candidate" != "$installed" ] &&
            apt-cache show "$pkg:amd64=$candidate" >/dev/null 2>&1; then
            align+=("$pkg:amd64=$candidate")
        fi
    done < <(apt-cache policy "${same[@]/%/:i386}" |
             awk '/^[^ ]/ { sub(/:i386:$/, ""); pkg = $0 } $1 == "Candidate:" { print pkg, $2 }')
fi
downgrade=()
if [ "${#align[@]}" -gt 0 ]; then
    echo "setup: aligning amd64 with i386: ${align[*]}" >&2
    downgrade=(--allow-downgrades)
fi

# One transaction: naming the i386 gstreamer library lets apt resolve wine32 without removing wine64.
# apt's output goes to a log that is shown only when the installation fails.
log=$(mktemp)
if ! $SUDO apt-get install -y -qq --no-install-recommends "${downgrade[@]}" \
    make cmake ninja-build python3 mingw-w64 nasm clang lld llvm libclang-rt-14-dev \
    wine wine64 "${i386_roots[@]}" fpc fp-utils fpc-source-3.2.2 "${align[@]}" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    rm -f "$log"
    echo "setup: apt-get install failed" >&2
    exit 1
fi
rm -f "$log"

if need_install; then
    echo "setup: some tools are still missing after installation" >&2
    exit 1
fi
if need_i386_emulator; then
    install_i386_emulator
fi
echo "setup: done" >&2
exec "$fpc_windows"
