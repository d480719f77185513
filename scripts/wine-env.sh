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
# kernel runs no 32-bit user code, and on the Firecracker AMD EPYC VMs of 2026-12-05/06, whose kernel
# is booted with 32-bit emulation off (dmesg: "32-bit emulation disabled. You can reenable with
# ia32_emulation=on"; even a far jump to the 32-bit user code segment faults there, so no Wine mode
# could run 32-bit code natively). There Win64 programs run through /usr/lib/wine/wine64, and the
# Win32 ones only under emulation (below): bench/run.py leaves Win32 unmeasured and says so. The
# answer is yes while fm5_i386_emulation_on's entry exists, and no when wine32 is not installed.
fm5_i386_runs() {
    /usr/lib/wine/wine --version >/dev/null 2>&1
}

# Where the kernel refuses i386 programs, scripts/run-tests.sh runs the Win32 tests under qemu-user:
# an i386 ELF entry in binfmt_misc (made by fm5_i386_emulation_on, removed by _off) makes Wine's
# 32-bit loader, and every i386 process it starts, run under qemu-i386. Release 10 or later, which
# scripts/setup.sh installs from bookworm-backports on such a machine: under Debian 12's own 7.2
# every program that starts a thread crashed ("uncaught target signal 11"), under 10.0.2 the whole
# win32 suite ran in 9 minutes (2026-12-06). Emulation checks behaviour, never speed.
# Prints the path of such a qemu-i386, or fails.
fm5_i386_emulator() {
    for fm5_qemu in /usr/bin/qemu-i386 /usr/bin/qemu-i386-static; do
        [ -x "$fm5_qemu" ] || continue
        fm5_qemu_major=$("$fm5_qemu" --version 2>/dev/null | sed -n 's/^qemu-i386 version \([0-9]*\)\..*/\1/p')
        if [ -n "$fm5_qemu_major" ] && [ "$fm5_qemu_major" -ge 10 ]; then
            echo "$fm5_qemu"
            return 0
        fi
    done
    return 1
}

FM5_BINFMT=/proc/sys/fs/binfmt_misc
FM5_BINFMT_ENTRY=fm5-qemu-i386

# Hands i386 executables to the emulator $1 until fm5_i386_emulation_off (root only). Fails without a
# change when the entry exists already (another run's: it is not ours to remove) or cannot be made.
# While the entry exists fm5_i386_runs says yes (bench/run.py also looks for the entry and then times
# no Win32): whoever makes it removes it (a trap on EXIT), so that it never outlives its command.
fm5_i386_emulation_on() {
    if [ ! -e "$FM5_BINFMT/register" ]; then
        mount -t binfmt_misc binfmt_misc "$FM5_BINFMT" 2>/dev/null || return 1
    fi
    [ ! -e "$FM5_BINFMT/$FM5_BINFMT_ENTRY" ] || return 1
    # The ELF header of a 32-bit little-endian x86 executable or shared object (e_type 2 or 3,
    # e_machine 3); 'F' opens the interpreter now, so that it serves inside chroots too.
    printf ':%s:M::%s:%s:%s:F\n' "$FM5_BINFMT_ENTRY" \
        '\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x03\x00' \
        '\xff\xff\xff\xff\xff\xfe\xfe\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff' \
        "$1" >"$FM5_BINFMT/register" 2>/dev/null
}

fm5_i386_emulation_off() {
    if [ -e "$FM5_BINFMT/$FM5_BINFMT_ENTRY" ]; then
        echo -1 >"$FM5_BINFMT/$FM5_BINFMT_ENTRY"
    fi
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
