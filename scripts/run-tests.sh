#!/usr/bin/env bash
# Builds and tests each given preset, going on after a failing one, then prints every variant's
# CTest summary and one closing line "N passed, N failed" over all of them (", N skipped" follows
# when tests were left unrun: on a machine that cannot execute 32-bit x86 code, the two that
# emulation cannot run, or every Win32 program where there is no emulator either; see below).
# Exits 1 if any build or test failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/wine-env.sh
. scripts/wine-env.sh

total_passed=0
total_failed=0
total_skipped=0
summaries=()

# Where the kernel refuses Win32 programs (fm5_i386_runs, scripts/wine-env.sh), a win32* variant's
# tests run under qemu-user (fm5_i386_emulator, which scripts/setup.sh installs there): the binfmt
# entry is made for the variant's tests alone and removed after them, so that the Win64 variants
# and anything after this script run natively. Under emulation, EMULATION_EXCLUDED do not run: they
# check that fm5 recovers from the access violation of a free racing with the release of its
# region, and qemu-user 10 makes Wine report any fault on a released or protected page as an illegal
# instruction (c000001d, not c0000005: a 20-line program that stores to a released page shows it),
# which no Windows does. Without an emulator the variant is still built (the compilers' warnings
# are errors) and its host checks run (exports, import-library decoration, layers); the tests that
# need the Wine fixture do not, and are counted as skipped.
i386_note="this machine cannot execute 32-bit x86 programs (Wine's i386 loader is refused)"
# An entry of ours at the start was left by a run that was killed outright: it would make the Win32
# tests below run under emulation as if natively, the excluded ones too.
if [ -e "$FM5_BINFMT/$FM5_BINFMT_ENTRY" ]; then
    echo "run-tests: removing $FM5_BINFMT/$FM5_BINFMT_ENTRY, left by an interrupted run" >&2
    fm5_i386_emulation_off
fi
i386_runs=1
fm5_i386_runs || i386_runs=0
emulator=""
if [ "$i386_runs" = 0 ]; then
    emulator=$(fm5_i386_emulator) || emulator=""
fi
EMULATION_EXCLUDED=(test_bad_pointer_race test_bad_pointer_race_static)
emulation_note="under emulation (qemu-user reports an access violation as an illegal instruction)"
emulating=0
stop_emulation() {
    if [ "$emulating" = 1 ]; then
        fm5_i386_emulation_off
        emulating=0
    fi
}
trap stop_emulation EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Prints a CTest -R expression for the variant's tests that do not require the Wine fixture, and
# on the second line how many tests do.
host_only_tests() {
    ctest --preset "$1" --show-only=json-v1 | python3 -c '
import json, re, sys
tests = json.load(sys.stdin)["tests"]
def fixtures(t, kind):
    for p in t.get("properties", []):
        if p["name"] == kind:
            return p["value"] if isinstance(p["value"], list) else [p["value"]]
    return []
wine = [t for t in tests if "wine" in fixtures(t, "FIXTURES_REQUIRED") + fixtures(t, "FIXTURES_SETUP")
        + fixtures(t, "FIXTURES_CLEANUP")]
host = [t["name"] for t in tests if t not in wine]
print("^(" + "|".join(re.escape(n) for n in host) + ")$" if host else "")
print(sum(1 for t in wine if not fixtures(t, "FIXTURES_SETUP") + fixtures(t, "FIXTURES_CLEANUP")))
'
}

# Each Wine variant's prefix takes about 1.3 GB (Wine 8 copies its DLLs into it) besides its build.
# Said at once when the disk may not hold them all: a full disk shows later only as wineboot's
# "could not load kernel32.dll" (CI, 2026-12-04).
need_mb=$(($# * 1500))
avail_mb=$(df -Pm . | awk 'NR == 2 { print $4 }')
if [ -n "$avail_mb" ] && [ "$avail_mb" -lt "$need_mb" ]; then
    echo "run-tests: warning: $avail_mb MB free here; $# variants may need about $need_mb MB" >&2
fi

for variant in "$@"; do
    # Emulation serves one win32 variant's tests, reruns included: never the next variant.
    stop_emulation
    echo "==== $variant: build"
    if ! scripts/build.sh "$variant"; then
        summaries+=("$variant: build failed")
        # A variant that does not build is one failure, so that the total cannot read as clean.
        total_failed=$((total_failed + 1))
        continue
    fi

    echo "==== $variant: test"
    log=build/$variant/ctest.log
    selection=()
    skipped=0
    skip_note=$i386_note
    if [[ $variant == win32* ]] && [ "$i386_runs" = 0 ] && [ -n "$emulator" ]; then
        if fm5_i386_emulation_on "$emulator"; then
            emulating=1
            echo "==== $variant: the Win32 programs run under $emulator (this kernel refuses i386 programs)"
            names=$(ctest --preset "$variant" --show-only=json-v1 |
                    python3 -c 'import json, sys; print("\n".join(t["name"] for t in json.load(sys.stdin)["tests"]))')
            excluded=()
            for name in "${EMULATION_EXCLUDED[@]}"; do
                grep -qx "$name" <<<"$names" && excluded+=("$name")
            done
            if [ "${#excluded[@]}" != 0 ]; then
                selection=(-E "^($(IFS='|'; echo "${excluded[*]}"))\$")
                skipped=${#excluded[@]}
                skip_note="$emulation_note: ${excluded[*]}"
                echo "==== $variant: not run $skip_note"
            fi
        else
            echo "==== $variant: could not register $emulator with binfmt_misc" >&2
        fi
    fi
    if [[ $variant == win32* ]] && [ "$i386_runs" = 0 ] && [ "$emulating" = 0 ]; then
        if ! listing=$(host_only_tests "$variant"); then
            summaries+=("$variant: the test list could not be read")
            total_failed=$((total_failed + 1))
            continue
        fi
        selection=(-R "$(head -n 1 <<<"$listing")")
        skipped=$(tail -n 1 <<<"$listing")
        echo "==== $variant: $skipped tests that run under Wine not run: $i386_note"
        if [ -z "$(head -n 1 <<<"$listing")" ]; then
            # Every test of the variant needs Wine (the checker-only variants): nothing to run.
            summaries+=("$variant: built; no test without Wine; $skipped tests not run: $i386_note")
            total_skipped=$((total_skipped + skipped))
            continue
        fi
    fi
    ctest --preset "$variant" "${selection[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}

    line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        summaries+=("$variant: ctest exited with $rc and printed no summary")
        total_failed=$((total_failed + 1))
        continue
    fi
    failed=$(sed -E 's/^[0-9]+% tests passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
    count=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    # A test that failed without printing anything never ran, and one that qemu-user ended ("qemu:
    # uncaught target signal", only under emulation) was ended by Wine or the emulator, not by a
    # check (scripts/silent-failures.py says why): it runs once more, and counts as passed only if
    # it passes then. Anything else that printed a line (a failed check, an assertion, a crash that
    # Wine reported) is not run again.
    if [ "$failed" != 0 ]; then
        emulated=()
        [ "$emulating" = 1 ] && emulated=(--emulated)
        mapfile -t silent < <(python3 scripts/silent-failures.py "${emulated[@]}" \
                                  "build/$variant/Testing/Temporary/LastTest.log")
        if [ "${#silent[@]}" != 0 ]; then
            echo "==== $variant: ${silent[*]} failed without any output or in the emulator: run once more"
            names=$(printf '%s|' "${silent[@]}")
            ctest --preset "$variant" -R "^(${names%|})\$" 2>&1 | tee "build/$variant/ctest-rerun.log"
            rerun_rc=${PIPESTATUS[0]}
            recovered=()
            for name in "${silent[@]}"; do
                if grep -qE "Test +#[0-9]+: ${name} \.+ +Passed" "build/$variant/ctest-rerun.log"; then
                    recovered+=("$name")
                fi
            done
            if [ "${#recovered[@]}" != 0 ]; then
                failed=$((failed - ${#recovered[@]}))
                line="$line; passed when run again after failing without output or in the emulator:"
                line="$line ${recovered[*]}"
                [ "$failed" = 0 ] && [ "$rerun_rc" = 0 ] && rc=0
            fi
        fi
    fi
    total_passed=$((total_passed + count - failed))
    total_failed=$((total_failed + failed))
    # CTest can fail without a failed test (a fixture error, a missing executable): count it too.
    if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
        total_failed=$((total_failed + 1))
        line="$line (but ctest exited with $rc)"
    fi
    if [ "$skipped" != 0 ]; then
        line="$line; $skipped tests not run: $skip_note"
        total_skipped=$((total_skipped + skipped))
    fi
    summaries+=("$variant: $line")
done
stop_emulation

echo
echo "==== summary"
for s in "${summaries[@]}"; do
    echo "$s"
done
if [ "$total_skipped" != 0 ]; then
    echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
else
    echo "$total_passed passed, $total_failed failed"
fi
[ "$total_failed" = 0 ]
