#!/usr/bin/env python3
"""bench/run.py takes a sample again when Wine, not the program, ended the run (run.py's
ended_by_wine: exit code 1 with no output at all, or Wine's "wine client error"), once, and lists it
in the report; any other failure, and a second failure of the retried run, still ends that
allocator's samples of the workload and is listed as a failure.

The benchmark program is a stand-in (--bench-cmd): this script itself, run with --fake, which fails
the calls that FAKE_PLAN names ("N" silent exit 1, "cN" Wine's client error, "eN" an ERROR line
of the program's) and prints a RESULT line for every other call. No Wine is needed."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(HERE), "bench", "run.py")
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.join(HERE, "support"))
import fake_bench  # noqa: E402
from checks import check  # noqa: E402


def fake(counter_file):
    if fake_bench.answered_list():
        return 0
    call = int(open(counter_file).read() or 0) + 1 if os.path.exists(counter_file) else 1
    with open(counter_file, "w") as f:
        f.write(str(call))
    plan = os.environ.get("FAKE_PLAN", "").split()
    if str(call) in plan:
        return 1
    if f"c{call}" in plan:
        print("wine client error:0: recvmsg: Connection reset by peer", file=sys.stderr)
        return 1
    if f"e{call}" in plan:
        print("ERROR the program's own failure", file=sys.stderr)
        return 1
    allocator = fake_bench.option("--allocator")
    print(f"RESULT workload=w1 allocator={allocator} ms={10 + call}.0 ops=5 peak_commit_kb=1 peak_ws_kb=2")
    return 0


def run(plan, pairs):
    """Runs the runner with allocators fm5 and heap (one warm-up round, then `pairs` rounds) and
    returns (samples per allocator, meta.json)."""
    out = tempfile.mkdtemp(prefix="fm5-retry-")
    counter = os.path.join(out, "calls")
    command = f"{sys.executable} {os.path.abspath(__file__)} --fake {counter}"
    env = dict(os.environ, FAKE_PLAN=plan)
    done = subprocess.run([sys.executable, RUNNER, "--bench-cmd", command, "--arch", "win64", "--workloads", "w1",
                           "--allocators", "fm5,heap", "--pairs", str(pairs), "--time-budget", "0",
                           "--out", out], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: run.py exited {done.returncode}:\n{done.stderr}")
    samples = {"fm5": 0, "heap": 0}
    with open(os.path.join(out, "results.csv")) as f:
        for row in csv.DictReader(f):
            samples[row["allocator"]] += 1
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    with open(os.path.join(out, "results.md")) as f:
        meta["report"] = f.read()
    shutil.rmtree(out)
    return samples, meta


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--fake":
        return fake(sys.argv[2])
    failures = 0
    # Calls: 1 = --list, then two per round (warm-up first), allocators in rotated order.
    samples, meta = run("", 3)
    failures += check("no failure: every sample kept", samples == {"fm5": 3, "heap": 3} and
                      not meta["failures"] and not meta.get("retried", []), f"{samples} {meta['failures']} {meta.get('retried')}")
    samples, meta = run("4 c7", 3)
    failures += check("silent exit and client error: taken again, every sample kept",
                      samples == {"fm5": 3, "heap": 3} and not meta["failures"] and len(meta.get("retried", [])) == 2 and
                      "Runs taken again" in meta["report"], f"{samples} {meta['failures']} {meta.get('retried')}")
    samples, meta = run("e4", 3)
    failures += check("the program's own failure: not taken again, the allocator stops",
                      sum(samples.values()) < 6 and len(meta["failures"]) == 1 and not meta.get("retried", []) and
                      "the program's own failure" in meta["failures"][0]["error"],
                      f"{samples} {meta['failures']} {meta.get('retried')}")
    samples, meta = run("4 5", 3)
    failures += check("a retried run that fails again: the allocator stops",
                      sum(samples.values()) < 6 and len(meta["failures"]) == 1 and len(meta.get("retried", [])) == 1,
                      f"{samples} {meta['failures']} {meta.get('retried')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
