#!/usr/bin/env bash
# Builds Free Pascal's Windows targets from Debian's packages, once, into a cache folder of the tree
# (default build/fpc, which `make clean` removes). Debian's fpc compiles for Linux only; the Pascal
# tests (tests/pascal) need:
#   <out>/units/x86_64-win64/   the win64 RTL units (system, sysutils, classes, windows, ...)
#   <out>/bin/ppcross386        an i386 compiler, built by Debian's ppcx64 from fpc-source
#   <out>/units/i386-win32/     the win32 RTL units, built by ppcross386
# Both Windows targets have FPC's internal assembler and linker: no MinGW binutils are involved.
# The recipe: /work/shared/reference/free-pascal-for-windows.md (checked on fpc 3.2.2+dfsg-20).
#
# Usage: scripts/setup-fpc.sh [OUT_DIR]
# Idempotent: returns at once when <out>/complete exists. Quiet on success; on failure it prints the
# end of the log (<out>/setup-fpc.log) and exits 1. Needs fpc, fp-utils and fpc-source-3.2.2
# (scripts/setup.sh installs them). Sources are copied: nothing under /usr is modified.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=${1:-build/fpc}
version=3.2.2
fpcsrc=/usr/share/fpcsrc/$version
fpclib=/usr/lib/x86_64-linux-gnu/fpc/$version
[ -f "$out/complete" ] && exit 0

for tool in ppcx64 fpcmake make; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "setup-fpc: $tool is missing (scripts/setup.sh installs fpc and fp-utils)" >&2
        exit 1
    }
done
for path in "$fpcsrc/rtl/win64/Makefile.fpc" "$fpcsrc/compiler/pp.pas" "$fpclib/msg/errore.msg" \
            "$fpclib/units/x86_64-linux/rtl/system.ppu"; do
    [ -e "$path" ] || { echo "setup-fpc: $path is missing (packages fpc, fpc-source-$version)" >&2; exit 1; }
done

mkdir -p "$out"
out=$(cd "$out" && pwd)
# Two build trees may ask at once (ctest in two presets): one builds, the other waits for it.
exec 9>"$out/.lock"
flock 9
[ -f "$out/complete" ] && exit 0

log=$out/setup-fpc.log
work=$out/work
rm -rf "$work" "$out/bin" "$out/units"
: >"$log"

fail() {
    echo "setup-fpc: $1 failed; the end of $log:" >&2
    tail -n 60 "$log" >&2
    exit 1
}
step() {
    local what=$1
    shift
    echo "==== $what: $*" >>"$log"
    "$@" >>"$log" 2>&1 || fail "$what"
}

start=$(date +%s%N)
mkdir -p "$work/src" "$out/bin" "$out/units" "$work/msg2inc" "$work/ppc386"
# Only the RTL and the compiler are needed (56 MB of the 230 MB source).
step copy cp -r "$fpcsrc/rtl" "$fpcsrc/compiler" "$work/src/"
rtl=$work/src/rtl
compiler=$work/src/compiler

# Debian's source has no generated Makefiles and no per-CPU makefile.cpu include.
: >"$rtl/x86_64/makefile.cpu"
: >"$rtl/i386/makefile.cpu"
( cd "$rtl" && step fpcmake-win64 fpcmake -Tx86_64-win64 win64/Makefile.fpc &&
  step fpcmake-win32 fpcmake -Ti386-win32 win32/Makefile.fpc )

step rtl-win64 make -C "$rtl/win64" all FPC="$(command -v ppcx64)" OS_TARGET=win64 CPU_TARGET=x86_64

# The compiler's message tables are generated from the message file that ships with the compiler.
step msg2inc ppcx64 -n -Fu"$fpclib/units/x86_64-linux/rtl" -FU"$work/msg2inc" -FE"$work/msg2inc" \
    "$compiler/utils/msg2inc.pp"
( cd "$compiler" && step msg-tables "$work/msg2inc/msg2inc" "$fpclib/msg/errore.msg" msg msg )
( cd "$compiler" && step ppcross386 ppcx64 -di386 -Fui386 -Fusystems -Fux86 -Fii386 -Fix86 -Fiinc \
    -FU"$work/ppc386" -FE"$out/bin" -o"$out/bin/ppcross386" pp.pas )

step rtl-win32 make -C "$rtl/win32" all FPC="$out/bin/ppcross386" OS_TARGET=win32 CPU_TARGET=i386

for target in x86_64-win64 i386-win32; do
    [ -f "$rtl/units/$target/classes.ppu" ] || fail "the $target units (no classes.ppu)"
    step "install-$target" mv "$rtl/units/$target" "$out/units/$target"
done
rm -rf "$work"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "built in $((elapsed_ms / 1000)).$((elapsed_ms % 1000 / 100)) s" >>"$log"
touch "$out/complete"
