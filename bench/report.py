#!/usr/bin/env python3
"""Report of a benchmark run: reads results.csv and meta.json from the output folder of
bench/run.py and writes results.md (tables, FastCode-style score, fm5 against the faster of the
peers FastMM5 and mimalloc when they ran, where fm5 is not the fastest),
summary.csv (one line per architecture, workload and allocator) and ratios.png (the paired gains
with their 95 % intervals, one panel per architecture).

  python3 bench/report.py [DIR]     re-renders DIR (default bench/results/) and prints the Markdown"""
import csv
import json
import os
import sys
from collections import defaultdict

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402

# FastCode Memory Manager Benchmark's category weights (BenchmarkClassUnit.pas:
# ComputeBenchmarkGlobalWeights); its "Memory Access Speed" category has no workload here.
CATEGORY_WEIGHTS = {
    "st-realloc": 0.08, "mt-realloc": 0.11, "st-allocfree": 0.10,
    "mt-allocfree": 0.14, "st-replay": 0.20, "mt-replay": 0.29,
}
UNSCORED = ("debug", "server")

# The peers a user would pick instead of fm5 (bench/run.py's PEERS), and fm5's targets against the
# faster of them (BENCHMARKS.md): its median time at most this fraction of that peer's, on the scored
# workloads of one thread and of many. The debug workloads have their own peer (fastmm5-debug), and
# the echo server's time is Wine's sockets, so neither is held to these.
TARGET_PEERS = ("fastmm5", "mimalloc")
TARGET_RATIO_SINGLE_THREAD = 0.8
TARGET_RATIO_MANY_THREADS = 0.9


def label(spec):
    """A short column name for an allocator spec (paths shortened to their file name)."""
    if spec.startswith("fm5:"):
        return "fm5:" + os.path.basename(spec[4:].replace("\\", "/"))
    parts = spec.rsplit(":", 3)
    if len(parts) == 4 and parts[0]:
        return os.path.basename(parts[0].replace("\\", "/")) + ":" + parts[1]
    return spec


def labels_for(specs):
    short = {s: label(s) for s in specs}
    if len(set(short.values())) < len(short):
        return {s: s for s in specs}
    return short


def load(out_dir):
    with open(os.path.join(out_dir, "meta.json")) as f:
        meta = json.load(f)
    # samples[(arch, workload)][allocator][round] = row
    samples = defaultdict(lambda: defaultdict(dict))
    with open(os.path.join(out_dir, "results.csv"), newline="") as f:
        for row in csv.DictReader(f):
            for key in ("ms", "wall_s"):
                row[key] = float(row[key])
            for key in ("round", "ops", "peak_commit_kb", "peak_ws_kb"):
                row[key] = int(row[key])
            # The scale the sample ran at (bench/run.py scales a slow peer down); empty: the run's.
            row["scale"] = float(row["scale"]) if row.get("scale") else None
            # The page faults of the sample's timed interval; empty: not known (an older run, or a
            # system that does not count them).
            row["page_faults"] = int(row["page_faults"]) if row.get("page_faults") else None
            samples[(row["arch"], row["workload"])][row["allocator"]][row["round"]] = row
    return meta, samples


def pct(value, digits=1):
    return "—" if value is None else f"{value:+.{digits}f} %"


def interval(result):
    if result["gain"] is None:
        return "—"
    return f"{result['gain']:+.1f} % [{result['low']:+.1f}, {result['high']:+.1f}]"


def scaled_down(meta, by_alloc):
    """{allocator: its scale} for the allocators of one workload that ran below the run's scale."""
    run_scale = meta["scale"] if meta["scale"] is not None else 1.0
    out = {}
    for allocator, rounds in by_alloc.items():
        scales = {row["scale"] for row in rounds.values() if row["scale"] is not None}
        if scales and min(scales) < run_scale * 0.999:
            out[allocator] = min(scales)
    return out


def comparable_ms(row, full_ops):
    """A sample's time, for a sample of a scaled-down allocator its time per operation times the
    operations of the workload at the run's scale (`full_ops`, from the allocators that ran it)."""
    if full_ops is None or row["ops"] <= 0 or row["ops"] == full_ops:
        return row["ms"]
    return row["ms"] * full_ops / row["ops"]


def analyse(meta, samples):
    """Per architecture: rows with medians and paired gains of the reference over each peer."""
    reference = meta["reference"]
    per_arch = defaultdict(list)
    for task in meta["workloads"]:
        by_alloc = samples.get((task["arch"], task["name"]), {})
        scaled = scaled_down(meta, by_alloc)
        full = [row["ops"] for a, rounds in by_alloc.items() if a not in scaled for row in rounds.values()]
        full_ops = stats.median(full) if full else None
        times = {a: {r: (comparable_ms(row, full_ops) if a in scaled else row["ms"])
                     for r, row in by_alloc.get(a, {}).items()} for a in task["allocators"]}
        medians = {a: stats.median(list(t.values())) if t else None for a, t in times.items()}
        commits = {a: stats.median([row["peak_commit_kb"] for row in by_alloc[a].values()])
                   if by_alloc.get(a) else None for a in task["allocators"]}
        working_sets = {a: stats.median([row["peak_ws_kb"] for row in by_alloc[a].values()])
                        if by_alloc.get(a) else None for a in task["allocators"]}
        counted = {a: [row["page_faults"] for row in by_alloc.get(a, {}).values() if row["page_faults"] is not None]
                   for a in task["allocators"]}
        faults = {a: stats.median(counted[a]) if counted[a] else None for a in task["allocators"]}
        gains = {}
        if reference in task["allocators"]:
            for peer in task["allocators"]:
                if peer != reference:
                    # Gain of the reference over the peer: time_peer / time_reference - 1, per round.
                    gains[peer] = stats.paired_gain(times[peer], times[reference])
        # Rounds measured, per allocator: one that crashed or hung after some rounds has fewer than
        # the others, and says so beside its median, instead of lowering the row's count for all.
        samples_of = {a: len(t) for a, t in times.items()}
        pairs = samples_of.get(reference) or max(samples_of.values(), default=0)
        per_arch[task["arch"]].append({**task, "medians": medians, "commits": commits, "scaled": scaled,
                                       "working_sets": working_sets, "faults": faults, "gains": gains,
                                       "measured_pairs": pairs, "samples": samples_of})
    return per_arch


def score(rows, allocators):
    """FastCode-style speed score: 1/time per workload, best allocator = 100, averaged per category,
    then weighted by category. An allocator lacking a scored workload (its samples failed) is left
    out of the score, so that every scored allocator is judged on the same workloads."""
    per_category = defaultdict(lambda: defaultdict(list))
    scored_rows = [r for r in rows if r["category"] in CATEGORY_WEIGHTS]
    left_out = [a for a in allocators if any(r["medians"].get(a) is None for r in scored_rows)]
    allocators = [a for a in allocators if a not in left_out]
    if not allocators:
        return [], {}, {}, left_out
    for row in scored_rows:
        medians = row["medians"]
        best = min(medians[a] for a in allocators)
        for a in allocators:
            per_category[row["category"]][a].append(100.0 * best / medians[a])
    categories = [c for c in CATEGORY_WEIGHTS if c in per_category]
    table = {}
    for a in allocators:
        by_cat = {c: sum(per_category[c][a]) / len(per_category[c][a]) for c in categories}
        weight = sum(CATEGORY_WEIGHTS[c] for c in categories)
        total = sum(CATEGORY_WEIGHTS[c] * by_cat[c] for c in categories) / weight if weight else None
        table[a] = {"categories": by_cat, "total": total}
    best_total = max((v["total"] for v in table.values() if v["total"] is not None), default=None)
    for v in table.values():
        v["relative"] = 100.0 * v["total"] / best_total if v["total"] and best_total else None
    counts = {c: len(per_category[c][allocators[0]]) for c in categories}
    return categories, counts, table, left_out


def not_fastest(per_arch, reference, names):
    lines = []
    for arch, rows in per_arch.items():
        for row in rows:
            mine = row["medians"].get(reference)
            others = {a: m for a, m in row["medians"].items() if a != reference and m is not None}
            if mine is None or not others:
                continue
            best = min(others, key=others.get)
            if others[best] < mine:
                margin = (mine / others[best] - 1.0) * 100.0
                paired = row["gains"].get(best)
                detail = f"; paired gain {interval(paired)}" if paired and paired["gain"] is not None else ""
                lines.append(f"- {arch} `{row['name']}` ({row['category']}): {names[best]} is faster; "
                             f"{names[reference]} takes {margin:.1f} % longer (median {mine:.1f} vs "
                             f"{others[best]:.1f} ms{detail})")
    return lines


def against_faster_peer(meta, per_arch, names):
    """Markdown lines: per architecture, the reference's median over the faster target peer's on every
    scored workload that both ran, with the reference's paired gain over that peer; bold where the
    ratio is above its target. None when no target peer is among the allocators."""
    reference = meta["reference"]
    peers = [p for p in TARGET_PEERS if p in meta["allocators"]]
    if meta["mode"] == "compare" or not peers:
        return []
    me = names[reference]
    out = ["", f"## {me} against the faster peer", "",
           f"Ratio: {me}'s median time over the faster median of "
           + " and ".join(names[p] for p in peers)
           + f" (a peer without samples of a workload is left out of its row). Targets: at most "
           f"{TARGET_RATIO_SINGLE_THREAD:g} on one thread, {TARGET_RATIO_MANY_THREADS:g} on many; bold "
           "where a ratio is above its target. The gain is the paired one over that peer."]
    for arch in meta["arches"]:
        lines, met, above_one, total = [], 0, [], 0
        for row in per_arch.get(arch, []):
            mine = row["medians"].get(reference)
            timed = {p: row["medians"][p] for p in peers if row["medians"].get(p) is not None}
            if row["category"] not in CATEGORY_WEIGHTS or mine is None or not timed:
                continue
            best = min(timed, key=timed.get)
            ratio = mine / timed[best]
            target = TARGET_RATIO_SINGLE_THREAD if row["threads"] == 1 else TARGET_RATIO_MANY_THREADS
            total += 1
            if ratio <= target:
                met += 1
            if ratio > 1.0:
                above_one.append(f"`{row['name']}` {ratio:.2f} ({names[best]})")
            shown = f"{ratio:.2f}" if ratio <= target else f"**{ratio:.2f}**"
            peer = names[best] + scaled_mark(row, best)
            lines.append(f"| `{row['name']}` | {row['threads']} | {mine:.1f} | {peer} | "
                         f"{timed[best]:.1f}{samples_mark(row, best)} | {shown} | {interval(row['gains'][best])} |")
        if not lines:
            continue
        out += ["", f"### {arch}: {me} / faster peer", "",
                f"| workload | threads | {me} ms | faster peer | its ms | ratio | {me}'s gain over it [95 %] |",
                "|---|---:|---:|---|---:|---:|---:|"] + lines
        out += ["", f"At most the target on {met} of {total} workloads; above 1.0: "
                + (", ".join(above_one) if above_one else "none") + "."]
    return out


SCALED_MARK = "†"


def scaled_mark(row, allocator):
    return SCALED_MARK if allocator in row.get("scaled", {}) else ""


def samples_mark(row, allocator):
    """' (n = k)' after a median of fewer samples than the row's rounds."""
    k = row["samples"].get(allocator, 0)
    return f" (n = {k})" if 0 < k < row["measured_pairs"] else ""


def memory_cell(row, allocator):
    ws, commit = row["working_sets"].get(allocator), row["commits"].get(allocator)
    if ws is None or commit is None:
        return "—"
    faults = row["faults"].get(allocator)
    return f"{ws / 1024:.1f} / {commit / 1024:.1f} / " + ("—" if faults is None else f"{faults:,.0f}")


def markdown(meta, per_arch):
    allocators, reference = meta["allocators"], meta["reference"]
    names = labels_for(allocators)
    peers = [a for a in allocators if a != reference]
    compare = meta["mode"] == "compare"
    out = ["# fm5 benchmark results", ""]
    if compare:
        a, b = allocators
        out.append(f"Paired comparison: A = `{a}`, B = `{b}`. Gain of B over A = (time_A / time_B − 1) · 100.")
    else:
        out.append(f"Broad table: gain of {names[reference]} over a peer = (time_peer / time_{names[reference]} "
                   "− 1) · 100, i.e. its throughput gain.")
    pairs = sorted({t["pairs"] for t in meta["workloads"]})
    budget = f"{meta['time_budget_min']:g} min" if meta["time_budget_min"] else "none"
    out += ["", f"Each sample is a fresh process; {meta['warmups']} warm-up round(s), then "
            f"{'/'.join(map(str, pairs))} measured round(s) per workload (requested {meta['pairs_requested']}); "
            "the allocator order rotates from round to round and a gain is the median of the per-round "
            "gains, with a deterministic 10,000-resample bootstrap 95 % interval of that median in brackets.",
            "", f"Allocators: {', '.join(f'`{a}`' for a in allocators)}. Scale: {meta['scale'] or 1}. "
            f"Time budget: {budget}. "
            f"Run time: {meta['elapsed_s'] / 60:.1f} min, finished {meta['finished']}. "
            f"Program: `{meta['bench_cmd']}`."]
    for arch in meta["arches"]:
        rows = per_arch.get(arch, [])
        if not rows:
            continue
        out += ["", f"## {arch}", ""]
        head = ["workload", "category", "threads", "pairs"] + [f"{names[a]} ms" for a in allocators]
        if compare:
            head += ["gain of B over A [95 %]"]
        else:
            head += [f"{names[reference]} vs {names[p]} [95 %]" for p in peers]
        # Memory beside speed: the process's peak working set and peak commit (MiB, medians), so that a
        # gain bought with memory shows in the same row, and the page faults of the timed interval
        # (median), which tell a row that is fresh pages (a first touch cost 11-12 us on the VMs of
        # 2026-12-06) from one that is the allocator's work.
        head += [f"{names[a]} peak WS / commit MiB / page faults" for a in allocators]
        out.append("| " + " | ".join(head) + " |")
        out.append("|---|---|---:|---:|" + "---:|" * (len(head) - 4))
        for row in rows:
            cells = [f"`{row['name']}`", row["category"], str(row["threads"]), str(row["measured_pairs"])]
            cells += ["—" if row["medians"].get(a) is None
                      else f"{row['medians'][a]:.1f}" + scaled_mark(row, a) + samples_mark(row, a)
                      for a in allocators]
            cells += [interval(row["gains"][p]) if p in row["gains"] else "—" for p in peers]
            cells += [memory_cell(row, a) + scaled_mark(row, a) for a in allocators]
            out.append("| " + " | ".join(cells) + " |")
        scaled = [f"`{row['name']}` {names[a]} at {row['scaled'][a]:g}" for row in rows for a in row["scaled"]]
        if scaled:
            out += ["", f"{SCALED_MARK} Scaled down (bench/run.py: its warm-up took far longer than "
                    f"{names[reference]}'s, or timed out): its time is its time per operation times the "
                    "workload's operations at the run's scale, and its memory and page faults those of "
                    "the smaller run: " + ", ".join(scaled) + "."]

        categories, counts, table, left_out = score(rows, allocators)
        out += ["", f"### {arch}: FastCode-style score (speed only)", "",
                "Speed = 1 / median time per workload, normalised so that the fastest allocator = 100; "
                "the mean per category is weighted by FastCode's category weights ("
                + ", ".join(f"{c} {w:g}" for c, w in CATEGORY_WEIGHTS.items())
                + ") over the categories present. Workloads of the categories `debug` and `server` are "
                "reported above but not scored."]
        if left_out:
            out.append("Left out of the score, for lack of samples of some scored workload (see Failures): "
                       + ", ".join(names[a] for a in left_out) + ".")
        if not categories:
            out += ["", "No scored workload."]
            continue
        out += [""]
        head = ["allocator"] + [f"{c} ({CATEGORY_WEIGHTS[c]:g}, {counts[c]} wl)" for c in categories] + \
               ["weighted total", "best = 100"]
        out.append("| " + " | ".join(head) + " |")
        out.append("|---|" + "---:|" * (len(head) - 1))
        for a in sorted(table, key=lambda a: -(table[a]["total"] or 0)):
            cells = [names[a]] + [f"{table[a]['categories'][c]:.1f}" for c in categories]
            cells += [f"{table[a]['total']:.1f}", f"{table[a]['relative']:.1f}"]
            out.append("| " + " | ".join(cells) + " |")

    out += against_faster_peer(meta, per_arch, names)
    lines = not_fastest(per_arch, reference, names)
    out += ["", f"## Workloads where {names[reference]} is not the fastest", ""]
    out += lines or [f"None: {names[reference]} has the lowest median time everywhere."]
    if meta.get("failures"):
        out += ["", "## Failures", ""]
        out += [f"- {f['arch']} `{f['workload']}` `{f['allocator']}`: {f['error']}" for f in meta["failures"]]
    if meta.get("retried"):
        out += ["", "## Runs taken again", "", "Wine ended these runs without a word from the program "
                "(bench/run.py, ended_by_wine); each was run once more and that run's sample kept.", ""]
        out += [f"- {f['arch']} `{f['workload']}` `{f['allocator']}`: {f['error']}" for f in meta["retried"]]
    if meta.get("scaled"):
        out += ["", "## Scaled down", ""]
        out += [f"- {e['arch']} `{e['workload']}` `{e['allocator']}`: {e['reason']}; ran at {e['scale']:g}"
                for e in meta["scaled"]]
    if meta.get("skipped"):
        out += ["", "## Skipped", ""] + [f"- {s}" for s in meta["skipped"]]
    return "\n".join(out) + "\n"


def write_summary(path, meta, per_arch):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["arch", "workload", "category", "threads", "allocator", "pairs", "median_ms",
                         "median_peak_commit_kb", "median_peak_ws_kb", "gain_of_reference_pct", "low_pct",
                         "high_pct", "scaled_to", "median_page_faults"])
        for arch in meta["arches"]:
            for row in per_arch.get(arch, []):
                for a in row["allocators"]:
                    g = row["gains"].get(a, {"gain": None, "low": None, "high": None})
                    m, c, w = row["medians"].get(a), row["commits"].get(a), row["working_sets"].get(a)
                    writer.writerow([arch, row["name"], row["category"], row["threads"], a, row["samples"].get(a, 0),
                                     "" if m is None else f"{m:.3f}", "" if c is None else c,
                                     "" if w is None else w,
                                     *("" if g[k] is None else f"{g[k]:.3f}" for k in ("gain", "low", "high")),
                                     row["scaled"].get(a, ""),
                                     "" if row["faults"].get(a) is None else f"{row['faults'][a]:.0f}"])


def chart(path, meta, per_arch):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is missing (apt-get install python3-matplotlib): no chart", file=sys.stderr)
        return False
    reference = meta["reference"]
    names = labels_for(meta["allocators"])
    peers = [a for a in meta["allocators"] if a != reference]
    arches = [a for a in meta["arches"] if any(r["gains"] for r in per_arch.get(a, []))]
    if not arches or not peers:
        print("report: no paired gain to draw: no chart", file=sys.stderr)
        return False
    most = max(len(per_arch[a]) for a in arches)
    fig, axes = plt.subplots(1, len(arches), figsize=(6.5 * len(arches), 1.2 + most * (0.12 + 0.1 * len(peers))),
                             squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    height = 0.8 / len(peers)
    for ax, arch in zip(axes[0], arches):
        rows = [r for r in per_arch[arch] if r["gains"]]
        for k, peer in enumerate(peers):
            ys, xs, lo, hi = [], [], [], []
            for i, row in enumerate(rows):
                g = row["gains"].get(peer)
                if g and g["gain"] is not None:
                    # Speed ratios on a log axis: +3000 % and -5 % are then both readable.
                    ratio = 1 + g["gain"] / 100
                    ys.append(i - 0.4 + height * (k + 0.5))
                    xs.append(ratio)
                    lo.append(max(ratio - (1 + g["low"] / 100), 0))
                    hi.append(max((1 + g["high"] / 100) - ratio, 0))
            legend = f"B over A" if meta["mode"] == "compare" else f"vs {names[peer]}"
            ax.barh(ys, [x - 1 for x in xs], left=1, height=height * 0.9, xerr=[lo, hi],
                    color=colours[k % len(colours)], error_kw={"elinewidth": 1, "capsize": 2}, label=legend)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([r["name"] for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.axvline(1, color="black", linewidth=0.8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(arch)
        what = "gain of B over A" if meta["mode"] == "compare" else f"{names[reference]}'s throughput gain"
        ax.set_xlabel(f"{what} as a speed ratio (1 = equal; log scale; median of paired rounds, "
                      "95 % bootstrap interval)", fontsize=8)
    handles, legends = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, legends, loc="lower center", ncol=len(peers), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def generate(out_dir):
    """Writes results.md, summary.csv and ratios.png into out_dir; returns the Markdown."""
    meta, samples = load(out_dir)
    per_arch = analyse(meta, samples)
    text = markdown(meta, per_arch)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(text)
    write_summary(os.path.join(out_dir, "summary.csv"), meta, per_arch)
    chart(os.path.join(out_dir, "ratios.png"), meta, per_arch)
    return text


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    print(generate(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "results")))
