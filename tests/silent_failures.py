#!/usr/bin/env python3
"""scripts/silent-failures.py, which picks the tests that scripts/run-tests.sh runs once more: from a
made-up CTest LastTest.log, a failed test without output is picked; one whose output ends in qemu's
"uncaught target signal" line is picked only with --emulated; a failed check, a crash that Wine
reported, and passed tests (with or without output) never are."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "scripts", "silent-failures.py")
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.join(HERE, "support"))
from checks import check  # noqa: E402

RULE = "-" * 58


def entry(number, name, output, passed):
    lines = [f"{number}/6 Testing: {name}", f"{number}/6 Test: {name}", "Command: \"x.exe\"",
             "Directory: /tmp", f"\"{name}\" start time: Dec 06 10:23 UTC", "Output:", RULE, *output,
             "<end of output>", "Test time =   0.51 sec", RULE, "Test Passed." if passed else "Test Failed.",
             f"\"{name}\" end time: Dec 06 10:23 UTC", f"\"{name}\" time elapsed: 00:00:00", RULE, ""]
    return "\n".join(lines)


LOG = "\n".join([
    entry(1, "never_ran", [], False),
    entry(2, "ended_by_qemu", ["test_x (win32)", "test_x: 342 passed, 0 failed",
                               "qemu: uncaught target signal 11 (Segmentation fault) - core dumped"], False),
    entry(3, "failed_check", ["FAIL: the block is zero", "test_y: 10 passed, 1 failed"], False),
    entry(4, "wine_reported_crash", ["wine: Unhandled page fault on read access to 0000000000000000"], False),
    entry(5, "passed_quietly", [], True),
    entry(6, "passed", ["test_z: 5 passed, 0 failed"], True),
])


def picked(*options):
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(LOG)
        path = f.name
    try:
        done = subprocess.run([sys.executable, SCRIPT, *options, path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    return done.returncode, done.stdout.split()


def main():
    failures = 0
    rc, names = picked()
    failures += check("without --emulated: only the test that printed nothing", rc == 0 and names == ["never_ran"],
                      f"exit {rc}, {names}")
    rc, names = picked("--emulated")
    failures += check("with --emulated: also the test that qemu ended",
                      rc == 0 and names == ["never_ran", "ended_by_qemu"], f"exit {rc}, {names}")
    rc, _ = picked("--emulated", "--other")
    failures += check("a second argument besides the log is refused", rc == 2, f"exit {rc}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
