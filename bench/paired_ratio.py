#!/usr/bin/env python3
"""Summarises paired A/B timings: medians, and the paired throughput gain of B over A,
(time_A / time_B - 1) * 100, with a deterministic 10,000-resample bootstrap 95 % interval of the
median of the per-pair gains (the seeds' method; the statistics are in stats.py).

Input: CSV lines "workload,pair,variant,milliseconds" (variant A or B) on stdin or in a file."""
import csv
import os
import sys
from collections import defaultdict

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402


def main():
    source = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    samples = defaultdict(lambda: {"A": {}, "B": {}})
    for row in csv.reader(source):
        if not row or row[0] == "workload":
            continue
        workload, pair, variant, ms = row[0], int(row[1]), row[2], float(row[3])
        samples[workload][variant][pair] = ms
    print("| workload | pairs | median A (ms) | median B (ms) | gain of B over A | 95 % interval |")
    print("|---|---:|---:|---:|---:|---|")
    for workload, by_variant in samples.items():
        a, b = by_variant["A"], by_variant["B"]
        pairs = sorted(set(a) & set(b))
        result = stats.paired_gain(a, b)
        print(f"| {workload} | {result['pairs']} | {stats.median([a[p] for p in pairs]):.1f} | "
              f"{stats.median([b[p] for p in pairs]):.1f} | {result['gain']:+.2f} % | "
              f"[{result['low']:+.2f} %, {result['high']:+.2f} %] |")


if __name__ == "__main__":
    main()
