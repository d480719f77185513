#!/usr/bin/env python3
"""bench/run.py scales a slow peer down rather than dropping it: in the table mode's warm-up, an
allocator other than the reference whose own time is above --slow-sample seconds and 4 times the
reference's runs the workload at a scale smaller by powers of ten, and one that times out is scaled
down a power of ten and tried once more (a second timeout drops it, as any failure); report.py
then gives its time per operation times the operations at the run's scale, marked. The paired
comparison and --slow-sample 0 never scale.

The benchmark program is a stand-in (--bench-cmd): this script with --fake. Its operations are
100,000 x the scale; "fm5" takes 20 ms at any scale, "slowpeer" 500 s x the scale (50 s at 0.1),
"hangpeer" sleeps past the runner's 1 s timeout above scale 0.011 and reports 30 s x the scale,
"deadpeer" sleeps past it at every scale. No Wine is needed. The page faults that a RESULT line may
carry reach results.csv and summary.csv, and a count of -1 or none is left empty."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(HERE), "bench", "run.py")
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.join(HERE, "support"))
import fake_bench  # noqa: E402
from checks import check  # noqa: E402


def fake():
    if fake_bench.answered_list():
        return 0
    allocator = fake_bench.option("--allocator")
    scale = float(fake_bench.option("--scale", 1.0))
    ms = {"fm5": 20.0, "slowpeer": 500000.0 * scale, "hangpeer": 30000.0 * scale,
          "deadpeer": 1.0}[allocator]
    if allocator == "hangpeer" and scale > 0.011 or allocator == "deadpeer":
        time.sleep(3)
    # fm5bench's page-fault count: fm5 has one, hangpeer's is unknown (-1), the others print none (an
    # older program)
    faults = {"fm5": " page_faults=1234", "hangpeer": " page_faults=-1"}.get(allocator, "")
    print(f"RESULT workload=w1 allocator={allocator} ms={ms} ops={round(100000 * scale)} "
          f"peak_commit_kb=1 peak_ws_kb=2{faults}")
    return 0


def run(*options):
    """Runs the runner on the stand-in; returns (rows of results.csv, meta.json, results.md)."""
    out = tempfile.mkdtemp(prefix="fm5-scale-")
    command = f"{sys.executable} {os.path.abspath(__file__)} --fake"
    done = subprocess.run([sys.executable, RUNNER, "--bench-cmd", command, "--arch", "win64", "--workloads", "w1",
                           "--time-budget", "0", "--timeout", "1", "--out", out, *options],
                          capture_output=True, text=True)
    try:
        if done.returncode != 0:
            raise SystemExit(f"FAIL: run.py exited {done.returncode}:\n{done.stderr}")
        with open(os.path.join(out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
        with open(os.path.join(out, "results.md")) as f:
            report = f.read()
        with open(os.path.join(out, "summary.csv")) as f:
            meta["summary"] = {r["allocator"]: r for r in csv.DictReader(f)}
    finally:
        shutil.rmtree(out)
    return rows, meta, report


def scales_of(rows, allocator):
    return sorted({r["scale"] for r in rows if r["allocator"] == allocator})


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--fake":
        return fake()
    failures = 0
    rows, meta, report = run("--allocators", "fm5,slowpeer,hangpeer,deadpeer", "--scale", "0.1",
                             "--pairs", "3", "--slow-sample", "1")
    # slowpeer: 50 s against fm5's 0.02 s and the 1 s threshold: two powers of ten (5 s would still be
    # above), so 0.001, where it takes 0.5 s for 100 operations: 50,000 ms for fm5's 10,000.
    failures += check("page faults in results.csv: counted, unknown (-1) and absent",
                      {r.get("page_faults") for r in rows if r["allocator"] == "fm5"} == {"1234"} and
                      {r.get("page_faults") for r in rows if r["allocator"] in ("slowpeer", "hangpeer")} == {""},
                      repr(sorted({(r["allocator"], r.get("page_faults")) for r in rows})))
    failures += check("summary.csv's median page faults",
                      meta["summary"]["fm5"].get("median_page_faults") == "1234" and
                      meta["summary"]["slowpeer"].get("median_page_faults") == "",
                      repr({a: r.get("median_page_faults") for a, r in meta["summary"].items()}))
    failures += check("a slow peer runs at a smaller scale", scales_of(rows, "slowpeer") == ["0.001"] and
                      scales_of(rows, "fm5") == ["0.1"], f"{scales_of(rows, 'slowpeer')} {scales_of(rows, 'fm5')}")
    median = float(meta["summary"]["slowpeer"]["median_ms"] or 0)
    failures += check("its time is per operation times the run's operations", abs(median - 50000.0) < 1.0 and
                      meta["summary"]["slowpeer"]["scaled_to"] == "0.001", meta["summary"]["slowpeer"])
    # hangpeer: times out at 0.1, runs at 0.01
    failures += check("a peer that times out is scaled down and tried once more, not dropped",
                      scales_of(rows, "hangpeer") == ["0.01"] and
                      len([r for r in rows if r["allocator"] == "hangpeer"]) == 3,
                      f"{scales_of(rows, 'hangpeer')} {meta['failures']}")
    # deadpeer: times out at 0.1 and at 0.01: dropped, the only failure
    failures += check("a peer that times out again is dropped",
                      not scales_of(rows, "deadpeer") and len(meta["failures"]) == 1 and
                      meta["failures"][0]["allocator"] == "deadpeer" and
                      "timed out" in meta["failures"][0]["error"],
                      f"{scales_of(rows, 'deadpeer')} {meta['failures']}")
    failures += check("the run lists the scaled ones with their reasons",
                      sorted((e["allocator"], e["scale"]) for e in meta["scaled"]) ==
                      [("hangpeer", 0.01), ("slowpeer", 0.001)] and
                      any("timed out" in e["reason"] for e in meta["scaled"]), meta["scaled"])
    failures += check("the report marks them", "## Scaled down" in report and "50000.0†" in report, report)
    rows, meta, _ = run("--allocators", "fm5,slowpeer", "--scale", "0.1", "--pairs", "3", "--slow-sample", "0")
    failures += check("--slow-sample 0: never scaled",
                      scales_of(rows, "slowpeer") == ["0.1"] and not meta["scaled"],
                      f"{scales_of(rows, 'slowpeer')} {meta['scaled']}")
    rows, meta, _ = run("--compare", "slowpeer,fm5", "--scale", "0.1", "--pairs", "2", "--warmups", "1",
                        "--slow-sample", "1")
    failures += check("the paired comparison never scales", scales_of(rows, "slowpeer") == ["0.1"] and
                      not meta["scaled"], f"{scales_of(rows, 'slowpeer')} {meta['scaled']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
