"""The stand-in for fm5bench that the runner's tests (tests/bench_runner_*.py) give bench/run.py with
--bench-cmd: a program that lists one workload, w1 (single-threaded, category st-allocfree), and
answers each sample as the test needs."""
import sys


def answered_list():
    """fm5bench --list: prints the stand-in's one workload; True when that was what was asked."""
    if "--list" not in sys.argv:
        return False
    print("w1 st-allocfree 1")
    return True


def option(name, default=None):
    """The value after `name` on the stand-in's command line, or `default` when it is not there."""
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
