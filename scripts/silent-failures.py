#!/usr/bin/env python3
"""Prints, one a line, the tests of a CTest LastTest.log that failed without printing anything, and
with --emulated those that qemu-user ended.

scripts/run-tests.sh runs those once more. Under Wine a program now and then ends at once with a
non-zero exit code and no output at all (Wine's start-up, before the program's main: seen once in
some 5,000 fm5bench runs, and on redirect_env_on in CI on 2026-12-04, 0.01 s, no output). Every test
here prints at least its summary line when it runs, and a failed check, an fm5 assertion or a crash
prints something, so a failure without output is one that never got to run the test.

Under qemu-user (Win32 on a kernel that refuses i386 programs, scripts/run-tests.sh) a run can also
end with qemu's own "qemu: uncaught target signal ..." line: the emulated process took a signal while
no handler of it was installed. Wine installs its handlers before a program's main and turns every
fault of the program into a Windows exception (an unhandled one ends with its exception code and
Wine's dump, not this line), so the line means that Wine or the emulator failed, not the test: seen
once, win32 test_stack_traces in CI on 2026-12-06, after its summary "342 passed, 0 failed"; win32-c's
run of it in the same CI passed, as did all three Win32 variants' runs in the next full run.

Usage: silent-failures.py [--emulated] BUILD_DIR/Testing/Temporary/LastTest.log
"""
import re
import sys

HEADER = re.compile(r"^\d+/\d+ Testing: (\S+)\s*$")
RULE = "-" * 58
EMULATOR_ENDED = re.compile(r"^qemu: uncaught target signal ")


def silent_failures(lines, emulated=False):
    name = None
    state = None  # "output:" seen, "collecting" its lines, "done" after <end of output>
    output = []
    for line in lines:
        line = line.rstrip("\n")
        match = HEADER.match(line)
        if match:
            name, state, output = match.group(1), None, []
            continue
        if name is None:
            continue
        if state is None and line == "Output:":
            state = "output:"
        elif state == "output:" and line == RULE:
            state = "collecting"
        elif state == "collecting" and line == "<end of output>":
            state = "done"
        elif state == "collecting":
            output.append(line)
        elif state == "done" and line in ("Test Failed.", "Test Passed."):
            if line == "Test Failed." and (not any(o.strip() for o in output) or
                                           emulated and any(EMULATOR_ENDED.match(o) for o in output)):
                yield name
            name = None


def main():
    args = sys.argv[1:]
    emulated = bool(args) and args[0] == "--emulated"
    if emulated:
        args = args[1:]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8", errors="replace") as log:
        for name in silent_failures(log, emulated):
            print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
