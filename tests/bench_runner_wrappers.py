#!/usr/bin/env python3
"""bench/run.py passes fm5bench's wrappers of an allocator (headerread:, passthrough:, in
bench/allocators.c) through to the program with the allocator inside resolved as it would be alone:
a wrapped peer becomes its DLL's path and exports behind the wrapper, and, like the peer, it runs
only when the peers folder has that peer's DLL (otherwise the run says it was left out, and still
runs the rest). A wrapped debug peer is a debug peer. The benchmark program is a stand-in
(--bench-cmd): this script with --fake, which answers every allocator spec it is given in its
RESULT line. No Wine is needed."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(os.path.dirname(HERE), "bench")
RUNNER = os.path.join(BENCH, "run.py")
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(HERE, "support"))
import fake_bench  # noqa: E402
import run as runner  # noqa: E402
from checks import check  # noqa: E402


def fake():
    if fake_bench.answered_list():
        return 0
    spec = fake_bench.option("--allocator")
    # the spec as the program got it, in a field of its own that run.py does not read
    print(f"RESULT workload=w1 allocator={spec} ms=10 ops=100 peak_commit_kb=1 peak_ws_kb=2 page_faults=3")
    with open(os.environ["FAKE_SPECS"], "a") as f:
        f.write(spec + "\n")
    return 0


def run(peers, *allocators):
    """Runs the runner on the stand-in; returns (allocators in results.csv, specs the program got,
    meta.json)."""
    out = tempfile.mkdtemp(prefix="fm5-wrappers-")
    specs = os.path.join(out, "specs.txt")
    command = f"{sys.executable} {os.path.abspath(__file__)} --fake"
    done = subprocess.run([sys.executable, RUNNER, "--bench-cmd", command, "--arch", "win64", "--workloads", "w1",
                           "--allocators", ",".join(allocators), "--pairs", "1", "--time-budget", "0",
                           "--timeout", "10", "--peers", peers, "--out", out],
                          capture_output=True, text=True, env=dict(os.environ, FAKE_SPECS=specs))
    try:
        if done.returncode != 0:
            raise SystemExit(f"FAIL: run.py exited {done.returncode}:\n{done.stderr}")
        with open(os.path.join(out, "results.csv")) as f:
            ran = {r["allocator"] for r in csv.DictReader(line for line in f if not line.startswith("#"))}
        with open(specs) as f:
            given = set(f.read().split())
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
    finally:
        shutil.rmtree(out)
    return ran, given, meta


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--fake":
        return fake()
    failures = 0
    peers = tempfile.mkdtemp(prefix="fm5-peers-")
    empty = tempfile.mkdtemp(prefix="fm5-nopeers-")
    try:
        os.makedirs(os.path.join(peers, "mimalloc", "win64"))
        open(os.path.join(peers, "mimalloc", "win64", "mimalloc.dll"), "w").close()
        dll = runner.windows_path(os.path.join(peers, "mimalloc", "win64", "mimalloc.dll"))
        plain = dll + ":mi_malloc:mi_free:mi_realloc"
        failures += check("a wrapped peer resolves behind its wrapper",
                          runner.resolve_spec("headerread:mimalloc", "win64", peers) == "headerread:" + plain and
                          runner.resolve_spec("passthrough:mimalloc", "win64", peers) == "passthrough:" + plain,
                          runner.resolve_spec("headerread:mimalloc", "win64", peers))
        failures += check("a wrapped fm5 keeps its spec",
                          runner.resolve_spec("headerread:fm5:Z:\\x\\{arch}.dll", "win32", peers) ==
                          "headerread:fm5:Z:\\x\\win32.dll", runner.resolve_spec("headerread:fm5", "win32", peers))
        failures += check("a wrapped debug peer is a debug peer",
                          runner.is_debug_peer("headerread:fastmm5-debug") and
                          not runner.is_debug_peer("headerread:mimalloc"), "")
        ran, given, _ = run(peers, "fm5", "mimalloc", "headerread:mimalloc", "passthrough:mimalloc")
        failures += check("with the peer present, every wrapped one runs",
                          ran == {"fm5", "mimalloc", "headerread:mimalloc", "passthrough:mimalloc"}, repr(ran))
        failures += check("and the program gets the peer's DLL behind the wrapper",
                          given == {"fm5", plain, "headerread:" + plain, "passthrough:" + plain}, repr(given))
        ran, given, meta = run(empty, "fm5", "headerread:mimalloc")
        failures += check("without the peer, the wrapped peer is left out and the rest runs",
                          ran == {"fm5"} and given == {"fm5"} and
                          any("headerread:mimalloc" in s for s in meta["skipped"]), f"{ran} {given} {meta['skipped']}")
    finally:
        shutil.rmtree(peers)
        shutil.rmtree(empty)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
