"""The check of the Python tests (tests/bench_*.py): prints "ok: NAME", or "FAIL: NAME: DETAIL" and
counts the failure, so that a test goes on after a failure and reports every one."""


def check(name, condition, detail):
    """1 when `condition` is false (printed with `detail`), else 0."""
    if not condition:
        print(f"FAIL: {name}: {detail}")
        return 1
    print(f"ok: {name}")
    return 0
