"""Statistics of fm5's benchmarks (standard library only).

The method is the seeds': samples are taken in pairs of fresh processes, the throughput gain of a
candidate over a baseline in one pair is (time_baseline / time_candidate - 1) * 100, the result is
the median of the per-pair gains, and its 95 % interval is a deterministic bootstrap (10,000
resamples with a fixed seed) of that median. Every call restarts the generator from the same seed,
so a result does not depend on what was computed before it."""
import random
import statistics

RESAMPLES = 10000
SEED = 12345


def median(values):
    return statistics.median(values)


def bootstrap_median_interval(values, resamples=RESAMPLES, seed=SEED):
    """95 % percentile interval of the median of `values`, from `resamples` resamples."""
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def gain_percent(baseline_ms, candidate_ms):
    """Throughput gain of the candidate over the baseline in one pair, in %."""
    return (baseline_ms / candidate_ms - 1.0) * 100.0


def paired_gains(baseline, candidate):
    """Per-pair gains from two dicts pair-key -> ms; only keys present in both count, in key order."""
    keys = sorted(set(baseline) & set(candidate))
    return [gain_percent(baseline[k], candidate[k]) for k in keys]


def paired_gain(baseline, candidate):
    """Median gain of the candidate over the baseline with its bootstrap interval.

    baseline, candidate: dicts pair-key -> ms. Returns a dict with pairs, gain, low, high (None
    for the numbers when no pair is complete; the interval of a single pair is that pair)."""
    gains = paired_gains(baseline, candidate)
    if not gains:
        return {"pairs": 0, "gain": None, "low": None, "high": None}
    low, high = bootstrap_median_interval(gains)
    return {"pairs": len(gains), "gain": median(gains), "low": low, "high": high}
