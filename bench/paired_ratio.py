#!/usr/bin/env python3
"""Summarises paired A/B timings: medians, and the paired throughput gain of B over A,
(time_A / time_B - 1) * 100, with a deterministic 10,000-resample bootstrap 95 % interval of the
median of the per-pair gains (the seeds' method).

Input: CSV lines "workload,pair,variant,milliseconds" (variant A or B) on stdin or in a file."""
import csv
import random
import statistics
import sys
from collections import defaultdict


def bootstrap_median_interval(values, resamples=10000, seed=12345):
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def main():
    source = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    samples = defaultdict(dict)
    for row in csv.reader(source):
        if not row or row[0] == "workload":
            continue
        workload, pair, variant, ms = row[0], int(row[1]), row[2], float(row[3])
        samples[workload].setdefault(pair, {})[variant] = ms
    print("| workload | pairs | median A (ms) | median B (ms) | gain of B over A | 95 % interval |")
    print("|---|---:|---:|---:|---:|---|")
    for workload, pairs in samples.items():
        complete = [p for p in pairs.values() if "A" in p and "B" in p]
        a = [p["A"] for p in complete]
        b = [p["B"] for p in complete]
        gains = [(p["A"] / p["B"] - 1.0) * 100.0 for p in complete]
        low, high = bootstrap_median_interval(gains)
        print(f"| {workload} | {len(complete)} | {statistics.median(a):.1f} | {statistics.median(b):.1f} | "
              f"{statistics.median(gains):+.2f} % | [{low:+.2f} %, {high:+.2f} %] |")


if __name__ == "__main__":
    main()
