#!/usr/bin/env bash
# Builds and tests each given preset, going on after a failing one, then prints every variant's
# CTest summary and one closing line "N passed, N failed" over all of them.
# Exits 1 if any build or test failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

total_passed=0
total_failed=0
summaries=()

for variant in "$@"; do
    echo "==== $variant: build"
    if ! scripts/build.sh "$variant"; then
        summaries+=("$variant: build failed")
        # A variant that does not build is one failure, so that the total cannot read as clean.
        total_failed=$((total_failed + 1))
        continue
    fi

    echo "==== $variant: test"
    log=build/$variant/ctest.log
    ctest --preset "$variant" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}

    line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        summaries+=("$variant: ctest exited with $rc and printed no summary")
        total_failed=$((total_failed + 1))
        continue
    fi
    failed=$(sed -E 's/^[0-9]+% tests passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
    count=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    total_passed=$((total_passed + count - failed))
    total_failed=$((total_failed + failed))
    # CTest can fail without a failed test (a fixture error, a missing executable): count it too.
    if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
        total_failed=$((total_failed + 1))
        line="$line (but ctest exited with $rc)"
    fi
    summaries+=("$variant: $line")
done

echo
echo "==== summary"
for s in "${summaries[@]}"; do
    echo "$s"
done
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" = 0 ]
