#!/usr/bin/env python3
"""Benchmark runner of fm5: runs bench/fm5bench.exe under Wine, one fresh process per sample, and
writes results.csv, results.md and ratios.png (see bench/report.py) into the output folder.

Two modes:
  broad table (default)  every selected workload with every allocator, in rounds that rotate the
                         allocator order (A,B,C,D then B,C,D,A ...); fm5's paired gain over each
                         peer, time_peer / time_fm5 - 1, from the samples of the same round.
  --compare A,B          the seeds' paired comparison: A and B processes in alternation (A first
                         in odd pairs), 3 warm-ups and 25 pairs by default; gain of B over A,
                         time_A / time_B - 1.

Usually started by scripts/bench.sh (`make bench BENCH_ARGS="..."`), which builds first.
Standard library only (the chart needs matplotlib, see report.py)."""
import argparse
import csv
import fnmatch
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, HERE)
import report  # noqa: E402

REPO = os.path.dirname(HERE)
ARCHES = ("win32", "win64")
DEFAULT_ALLOCATORS = "fm5,heap,msvcrt,ucrtbase"
# Left out of the broad table unless named: they take minutes each.
EXCLUDED_BY_DEFAULT = ("echo_server_500", "echo_server_1000")
CSV_FIELDS = ["arch", "workload", "category", "allocator", "round", "ms", "ops", "peak_commit_kb",
              "peak_ws_kb", "wall_s", "scale", "page_faults"]
MIN_PAIRS = 3
# A peer much slower than the reference on a workload runs it smaller rather than not at all, so that
# the broad table keeps every allocator's row and fits its time (mimalloc's MinGW DLL takes 120 s and
# more on validate47 under Wine, where fm5 takes 14 ms; the Wine heaps take minutes on some
# workloads). In the table mode's warm-up, an allocator other than the reference whose sample's own
# time exceeds both SLOW_SAMPLE_S (--slow-sample) and SLOW_FACTOR times the reference's is scaled
# down by powers of ten until it would not, and one that times out is scaled down a power of ten and
# tried once more, at most MAX_SCALE_STEPS powers in all. report.py gives such an allocator's time per
# operation times the operations of the workload at the run's scale, and marks it. The paired
# comparison (--compare) never scales: its two builds run the same work.
# 8 s, not 20: at 20 the Wine heaps' larson and validate47 (10-13.5 s a sample on the Zen 3 VM,
# 2026-12-07) ran at full scale, three heaps x three pairs x both architectures, some 6 of make
# bench's 43 minutes; scaled, they keep their rows, marked.
SLOW_SAMPLE_S = 8.0
SLOW_FACTOR = 4.0
MAX_SCALE_STEPS = 3


def log(message=""):
    print(message, file=sys.stderr, flush=True)


def duration(seconds):
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def is_fm5(spec):
    variants = ("fm5", "fm5-affinity", "fm5-nocache")
    return spec in variants or spec.startswith(tuple(v + ":" for v in variants))


# The peers of ../shared/peers/ (its README), by name: the DLL under <peers>/<folder>, its exports.
# "fastmm5-debug" is FastMM5's debug build: always in debug mode with 20-frame traces, so it runs the
# debug workloads that trace at depth 20 (and only those), through fm5bench's "debugdll:" spec.
PEERS = {
    "fastmm5": ("fastmm5/{arch}/BorlndMM.dll", "GetMemory:FreeMemory:ReallocMemory", ""),
    "mimalloc": ("mimalloc/{arch}/mimalloc.dll", "mi_malloc:mi_free:mi_realloc", ""),
    "fastmm5-debug": ("fastmm5/{arch}-debug/BorlndMM.dll", "GetMemory:FreeMemory:ReallocMemory", "debugdll:"),
}
DEFAULT_PEERS_DIR = os.path.join(os.path.dirname(REPO), "shared", "peers")


def windows_path(path):
    # Symbolic links resolved, so that a DLL that loads a support DLL from its own folder finds it.
    return "Z:" + os.path.realpath(path).replace("/", "\\")


def peers_available(peers_dir, arch):
    """The names of the peers whose DLL exists for `arch` (none without a peers folder)."""
    if not peers_dir or not os.path.isdir(peers_dir):
        return []
    return [name for name, (dll, _, _) in PEERS.items()
            if os.path.isfile(os.path.join(peers_dir, dll.replace("{arch}", arch)))]


# fm5bench's wrappers of another allocator (bench/allocators.c): "headerread:mimalloc" is mimalloc
# with a load of the word before each freed or reallocated block. They do not nest (fm5bench refuses).
WRAPPERS = ("headerread:", "passthrough:")


def split_wrapper(spec):
    """(the wrapper's prefix or "", the allocator inside it)."""
    for wrapper in WRAPPERS:
        if spec.startswith(wrapper):
            return wrapper, spec[len(wrapper):]
    return "", spec


def unwrapped(spec):
    """The allocator inside fm5bench's wrapper: a peer's name for a wrapped peer."""
    return split_wrapper(spec)[1]


def resolve_spec(spec, arch, peers_dir):
    """The --allocator argument for fm5bench: a peer's name becomes its DLL's path and exports."""
    wrapper, spec = split_wrapper(spec)
    if wrapper:
        return wrapper + resolve_spec(spec, arch, peers_dir)
    if spec in PEERS:
        dll, exports, prefix = PEERS[spec]
        return prefix + windows_path(os.path.join(peers_dir, dll.replace("{arch}", arch))) + ":" + exports
    return spec.replace("{arch}", arch)


def is_debug_peer(spec):
    spec = unwrapped(spec)
    return spec in PEERS and PEERS[spec][2] == "debugdll:"


def traces_at_depth_20(workload_name):
    return workload_name.endswith("_d20") or workload_name == "xml_debug"


class SampleError(Exception):
    def __init__(self, message, ended_by_wine=False, timed_out=False):
        super().__init__(message)
        self.ended_by_wine = ended_by_wine
        self.timed_out = timed_out


def ended_by_wine(returncode, out, err):
    """A run that Wine ended, not the program: exit code 1 with nothing on stdout or stderr, or
    Wine's client reporting that it lost the server. fm5bench writes "ERROR ..." before each exit of
    its own with code 1, fm5's fatal stop exits with 134 and a fault with the exception's code after
    winedbg's lines. Seen: exit 1 and no word three times in docs/bench/'s reports of 2026-12-05
    (fm5's DLLs; bench/smoke.sh once saw it with Wine's heap), and "wine client error:0:
    recvmsg: Connection reset by peer" in 3 of 400 runs made without a persistent wineserver. The
    rule is bench/smoke.sh's run_one's."""
    if returncode != 1:
        return False
    return (not out.strip() and not err.strip()) or "wine client error" in err


class Bench:
    """Starts the benchmark program of one architecture; one call = one fresh process."""

    def __init__(self, template, exe, timeout):
        self.template = template
        self.exe = exe
        self.timeout = timeout

    def command(self, arch, args):
        if self.template:
            return shlex.split(self.template.replace("{arch}", arch)) + args
        return [os.path.join(REPO, "scripts", "wine-run.sh"), os.path.join("build", arch),
                self.exe.replace("{arch}", arch)] + args

    def run(self, arch, args):
        command = self.command(arch, args)
        try:
            done = subprocess.run(command, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise SampleError(f"timed out after {self.timeout:g} s", timed_out=True)
        except OSError as error:
            raise SampleError(f"cannot start {command[0]}: {error}")
        out = done.stdout.decode("utf-8", "replace").replace("\r", "")
        err = done.stderr.decode("utf-8", "replace").replace("\r", "")
        if done.returncode != 0:
            lines = [line for line in err.splitlines() if line.startswith("ERROR")] or err.splitlines()[-3:]
            raise SampleError(f"exit {done.returncode}: " + (" | ".join(lines) or "no message"),
                              ended_by_wine(done.returncode, out, err))
        return out

    def list_workloads(self, arch):
        out = self.run(arch, ["--list"])
        workloads = []
        for line in out.splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[2].isdigit():
                workloads.append({"name": fields[0], "category": fields[1], "threads": int(fields[2])})
        if not workloads:
            raise SampleError("--list printed no workload")
        return workloads

    def sample(self, arch, workload, allocator, scale, peers_dir=None):
        args = ["--workload", workload, "--allocator", resolve_spec(allocator, arch, peers_dir)]
        if scale is not None:
            args += ["--scale", repr(scale)]
        started = time.monotonic()
        out = self.run(arch, args)
        wall = time.monotonic() - started
        for line in out.splitlines():
            if line.startswith("RESULT "):
                # The allocator spec may hold anything: read only the numeric fields.
                fields = dict(re.findall(r"\b(ms|ops|peak_commit_kb|peak_ws_kb|page_faults)=(\S+)", line))
                try:
                    # page_faults: the timed interval's, -1 (or absent, from an older program) if unknown.
                    faults = int(fields.get("page_faults", "-1"))
                    return {"ms": float(fields["ms"]), "ops": int(fields["ops"]),
                            "peak_commit_kb": int(fields["peak_commit_kb"]),
                            "peak_ws_kb": int(fields["peak_ws_kb"]), "wall_s": wall,
                            "page_faults": faults if faults >= 0 else None}
                except (KeyError, ValueError):
                    raise SampleError(f"malformed RESULT line: {line}")
        raise SampleError("no RESULT line on stdout")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--arch", default="win32,win64", help="comma list of win32, win64 (default both)")
    parser.add_argument("--workloads", help="comma list of names or glob patterns, matched against the "
                        "name or the category (default: every listed workload except "
                        + " and ".join(EXCLUDED_BY_DEFAULT) + ")")
    parser.add_argument("--allocators", help=f"comma list of allocator specs (default {DEFAULT_ALLOCATORS}; "
                        "debug workloads run the fm5 specs only); headerread:SPEC and passthrough:SPEC run SPEC "
                        "behind fm5bench's wrappers (bench/allocators.c)")
    parser.add_argument("--peers", default=os.environ.get("FM5_PEERS", DEFAULT_PEERS_DIR),
                        help="the peers folder (default $FM5_PEERS, else ../shared/peers); its allocators, "
                        "named " + ", ".join(PEERS) + ", join the default list when present, and may be named "
                        "in --allocators and --compare")
    parser.add_argument("--reference", help="the allocator whose gain over the others is reported "
                        "(broad table; default the first fm5 spec, else the first allocator)")
    parser.add_argument("--compare", metavar="A,B", help="paired mode: alternate A and B, report B's gain over A")
    parser.add_argument("--pairs", type=int, help="measured rounds per workload (default 3; 25 with --compare)")
    parser.add_argument("--warmups", type=int, help="unrecorded rounds first (default 1; 3 with --compare)")
    parser.add_argument("--scale", type=float, help="passed to fm5bench --scale (default 0.1 for the broad table, "
                        "1 with --compare)")
    parser.add_argument("--out", default=os.path.join(REPO, "bench", "results"),
                        help="output folder (default bench/results/)")
    parser.add_argument("--time-budget", type=float, metavar="MIN",
                        help="scale the pairs down so that the run fits in MIN minutes, from the time of "
                        "the first samples (default 30; none with --compare; 0 = no limit)")
    # A sample of the broad table takes seconds; mimalloc's MinGW DLL hangs under Wine in some
    # multithreaded runs, and each hang costs the whole timeout.
    parser.add_argument("--timeout", type=float, default=120, help="seconds allowed to one process (default 120)")
    parser.add_argument("--slow-sample", type=float, default=SLOW_SAMPLE_S, metavar="S",
                        help="in the table mode's warm-up, scale an allocator down when its sample takes "
                        f"more than S seconds and {SLOW_FACTOR:g} times the reference's "
                        f"(default {SLOW_SAMPLE_S:g}; 0: never)")
    parser.add_argument("--bench-exe", default=os.path.join("build", "{arch}", "bin", "fm5bench.exe"),
                        help="the Windows program run under Wine ({arch} is replaced; default "
                        "build/{arch}/bin/fm5bench.exe)")
    parser.add_argument("--peer-spec", metavar="NAME",
                        help="print the fm5bench --allocator spec of the peer NAME for the one --arch and "
                        "exit (1 without output when the peers folder lacks it): bench/smoke.sh asks here")
    parser.add_argument("--bench-cmd", default=os.environ.get("FM5_BENCH_CMD"),
                        help="command template replacing `scripts/wine-run.sh build/{arch} "
                        "build/{arch}/bin/fm5bench.exe` ({arch} is replaced); no Wine prefix is set up "
                        "then (default: $FM5_BENCH_CMD)")
    args = parser.parse_args(argv)

    args.arches = [a for a in args.arch.split(",") if a]
    for arch in args.arches:
        if arch not in ARCHES:
            parser.error(f"unknown architecture {arch!r} (win32, win64)")
    args.arch_notes = []
    if "win32" in args.arches and not args.bench_cmd and not args.peer_spec and not i386_runs():
        note = ("win32 not measured: this machine cannot execute 32-bit x86 programs natively (Wine's i386 "
                "loader is refused, or runs only under emulation; scripts/wine-env.sh, fm5_i386_runs)")
        if args.arches == ["win32"]:
            parser.error(note)
        args.arches.remove("win32")
        args.arch_notes.append(note)
    if args.compare:
        pair = [a for a in args.compare.split(",") if a]
        if len(pair) != 2 or pair[0] == pair[1]:
            parser.error("--compare takes two different allocator specs: A,B")
        if args.allocators or args.reference:
            parser.error("--compare sets the allocators: leave out --allocators and --reference")
        args.allocator_list = pair
        args.reference = pair[1]
        args.mode = "compare"
        defaults = (25, 3, 0.0)
    else:
        args.allocator_list = [a for a in (args.allocators or DEFAULT_ALLOCATORS).split(",") if a]
        if not args.allocators:
            # The peers join the default list when the folder has them (for either architecture).
            args.allocator_list += [p for p in PEERS if any(p in peers_available(args.peers, a) for a in ARCHES)]
        if len(set(args.allocator_list)) != len(args.allocator_list):
            parser.error("--allocators lists an allocator twice")
        if args.reference is None:
            args.reference = next((a for a in args.allocator_list if is_fm5(a)), args.allocator_list[0])
        elif args.reference not in args.allocator_list:
            parser.error("--reference must be one of --allocators")
        args.mode = "table"
        # The broad table's default: 3 pairs at a tenth of every workload's reference size, so that
        # both architectures with four allocators fit in 30 minutes on a 2-core machine under Wine
        # (the Wine heaps take minutes on some workloads at full size).
        defaults = (3, 1, 30.0)
        if args.scale is None:
            args.scale = 0.1
    if args.pairs is None:
        args.pairs = defaults[0]
    if args.warmups is None:
        args.warmups = defaults[1]
    if args.time_budget is None:
        args.time_budget = defaults[2]
    if args.pairs < 1 or args.warmups < 0:
        parser.error("--pairs must be at least 1 and --warmups at least 0")
    if args.scale is not None and args.scale <= 0:
        parser.error("--scale must be positive")
    args.out = os.path.abspath(args.out)
    return args


def i386_runs():
    """Whether Wine can run Win32 programs here natively: the probe that scripts/run-tests.sh also asks,
    and no when they run only through fm5's emulation entry (scripts/wine-env.sh,
    fm5_i386_emulation_on), whose times would say nothing of fm5's speed."""
    test = '. scripts/wine-env.sh && fm5_i386_runs && [ ! -e "$FM5_BINFMT/$FM5_BINFMT_ENTRY" ]'
    probe = subprocess.run(["sh", "-c", test], cwd=REPO)
    return probe.returncode == 0


def select_workloads(listed, patterns):
    if patterns is None:
        return [w for w in listed if w["name"] not in EXCLUDED_BY_DEFAULT]
    chosen = []
    for pattern in (p.strip() for p in patterns.split(",")):
        if not pattern:
            continue
        hits = [w for w in listed if fnmatch.fnmatchcase(w["name"], pattern)
                or fnmatch.fnmatchcase(w["category"], pattern)]
        if not hits:
            names = " ".join(w["name"] for w in listed)
            raise SystemExit(f"bench: no workload matches {pattern!r}; listed: {names}")
        chosen += [w for w in hits if w not in chosen]
    return chosen


class Runner:
    def __init__(self, args):
        self.args = args
        self.bench = Bench(args.bench_cmd, args.bench_exe, args.timeout)
        self.started = time.monotonic()
        self.tasks = []
        self.failures = []
        self.retried = []
        self.skipped = []
        self.scaled = {}  # (arch, workload, allocator): its last scale-down, for the report
        self.prefixes = []
        self.csv_file = None
        self.csv = None

    # -- Wine prefixes ---------------------------------------------------------------------------
    def setup_prefixes(self):
        if self.args.bench_cmd:
            return
        for arch in self.args.arches:
            exe = os.path.join(REPO, self.args.bench_exe.replace("{arch}", arch))
            if not os.path.isfile(exe):
                raise SystemExit(f"bench: {exe} is missing: build it with `make` (scripts/bench.sh does)")
        for arch in self.args.arches:
            self.prefixes.append(arch)
            subprocess.run([os.path.join(REPO, "scripts", "wine-prefix.sh"), os.path.join("build", arch),
                            "setup"], cwd=REPO, stdout=sys.stderr, check=True)

    def cleanup_prefixes(self):
        while self.prefixes:
            arch = self.prefixes.pop()
            subprocess.run([os.path.join(REPO, "scripts", "wine-prefix.sh"), os.path.join("build", arch),
                            "cleanup"], cwd=REPO, stdout=subprocess.DEVNULL)

    # -- plan ------------------------------------------------------------------------------------
    def plan(self):
        args = self.args
        for arch in args.arches:
            try:
                listed = self.bench.list_workloads(arch)
            except SampleError as error:
                raise SystemExit(f"bench: {arch}: fm5bench --list failed: {error}")
            for workload in select_workloads(listed, args.workloads):
                allocators = [a for a in args.allocator_list
                              if unwrapped(a) not in PEERS or unwrapped(a) in peers_available(args.peers, arch)]
                missing = [a for a in args.allocator_list if a not in allocators]
                if missing and (args.mode == "compare" or args.allocators):
                    self.skipped.append(f"{arch} {workload['name']}: no peers folder entry for {', '.join(missing)}")
                if workload["category"] == "debug":
                    allocators = [a for a in allocators if is_fm5(a) or
                                  (is_debug_peer(a) and traces_at_depth_20(workload["name"]))]
                    if args.mode == "compare" and len(allocators) < 2 or not allocators:
                        self.skipped.append(f"{arch} {workload['name']}: debug workloads run only with fm5 specs "
                                            "(and, at depth 20, FastMM5's debug build)")
                        continue
                elif any(is_debug_peer(a) for a in allocators):
                    allocators = [a for a in allocators if not is_debug_peer(a)]
                if args.mode == "compare" and len(allocators) < 2:
                    continue
                self.tasks.append({"arch": arch, "name": workload["name"], "category": workload["category"],
                                   "threads": workload["threads"], "allocators": allocators,
                                   "active": list(allocators), "pairs": args.pairs, "round_s": None,
                                   "warmups_done": 0, "rounds_done": 0,
                                   "scales": {a: args.scale for a in allocators}})
        if not self.tasks:
            raise SystemExit("bench: nothing to run")

    # -- samples ---------------------------------------------------------------------------------
    def open_csv(self):
        os.makedirs(self.args.out, exist_ok=True)
        self.csv_file = open(os.path.join(self.args.out, "results.csv"), "w", newline="")
        self.csv = csv.DictWriter(self.csv_file, fieldnames=CSV_FIELDS)
        self.csv.writeheader()
        self.csv_file.flush()

    def sample_retrying_once(self, task, allocator):
        """One sample; a run that Wine ended (ended_by_wine) is taken once more, and the report lists
        it, so that a failure of Wine's does not cost an allocator the rest of its samples."""
        try:
            return self.bench.sample(task["arch"], task["name"], allocator, task["scales"][allocator],
                                     self.args.peers)
        except SampleError as error:
            if not error.ended_by_wine:
                raise
            self.retried.append({"arch": task["arch"], "workload": task["name"], "allocator": allocator,
                                 "error": str(error)})
            log(f"bench: NOTE {task['arch']} {task['name']} {allocator}: {error}: ended by Wine, taken again")
            return self.bench.sample(task["arch"], task["name"], allocator, task["scales"][allocator],
                                     self.args.peers)

    def may_scale_down(self, task, allocator):
        return (self.args.mode == "table" and self.args.slow_sample > 0 and allocator != self.args.reference
                and self.scale_steps(task, allocator) < MAX_SCALE_STEPS)

    def base_scale(self):
        return self.args.scale if self.args.scale is not None else 1.0

    def scale_steps(self, task, allocator):
        """How many powers of ten the allocator's scale is below the run's."""
        scale = task["scales"][allocator]
        return 0 if scale is None else round(math.log10(self.base_scale() / scale))

    def scale_down(self, task, allocator, steps, reason):
        old = task["scales"][allocator]
        steps = min(self.scale_steps(task, allocator) + steps, MAX_SCALE_STEPS)
        task["scales"][allocator] = self.base_scale() / 10 ** steps
        entry = {"arch": task["arch"], "workload": task["name"], "allocator": allocator,
                 "scale": task["scales"][allocator],
                 "reason": f"{reason} at scale {1.0 if old is None else old:g}"}
        self.scaled[(task["arch"], task["name"], allocator)] = entry
        log(f"bench: NOTE {task['arch']} {task['name']} {allocator}: {entry['reason']}: "
            f"runs at scale {entry['scale']:g} from now on")

    def warm_up_sample(self, task, allocator):
        """A warm-up sample; an allocator that may be scaled down and times out is, and tries once
        more. Once only: a run that hangs (mimalloc's DLL does on some multithreaded workloads under
        Wine) would hang at every scale, and each try costs the whole timeout."""
        try:
            return self.sample_retrying_once(task, allocator)
        except SampleError as error:
            if not (error.timed_out and self.may_scale_down(task, allocator)):
                raise
            self.scale_down(task, allocator, 1, str(error))
        try:
            return self.sample_retrying_once(task, allocator)
        except SampleError:
            # not scaled but failed: the failures list it
            del self.scaled[(task["arch"], task["name"], allocator)]
            raise

    def scale_down_slow(self, task, times_ms):
        """After a warm-up round: the allocators whose own time is far above the reference's."""
        reference_s = times_ms.get(self.args.reference, 0.0) / 1000.0
        limit = max(self.args.slow_sample, SLOW_FACTOR * reference_s)
        for allocator, ms in times_ms.items():
            seconds = ms / 1000.0
            if seconds > limit and self.may_scale_down(task, allocator):
                steps = math.ceil(math.log10(seconds / limit))
                self.scale_down(task, allocator, max(1, steps),
                                f"{seconds:.3g} s against the reference's {reference_s:.3g} s")

    def run_round(self, task, order_index, round_number):
        """One process per active allocator, in the rotated order; round_number None = warm-up."""
        allocators = task["allocators"]
        shift = order_index % len(allocators)
        order = [a for a in allocators[shift:] + allocators[:shift] if a in task["active"]]
        started = time.monotonic()
        times_ms = {}
        for allocator in order:
            try:
                if round_number is None:
                    result = self.warm_up_sample(task, allocator)
                else:
                    result = self.sample_retrying_once(task, allocator)
            except SampleError as error:
                task["active"].remove(allocator)
                self.failures.append({"arch": task["arch"], "workload": task["name"], "allocator": allocator,
                                      "error": str(error)})
                log(f"bench: WARNING {task['arch']} {task['name']} {allocator}: {error} "
                    "(no more samples of this allocator here)")
                continue
            times_ms[allocator] = result["ms"]
            if round_number is not None:
                scale = task["scales"][allocator]
                self.csv.writerow({"arch": task["arch"], "workload": task["name"], "category": task["category"],
                                   "allocator": allocator, "round": round_number, "ms": f"{result['ms']:.3f}",
                                   "ops": result["ops"], "peak_commit_kb": result["peak_commit_kb"],
                                   "peak_ws_kb": result["peak_ws_kb"], "wall_s": f"{result['wall_s']:.3f}",
                                   "scale": "" if scale is None else repr(scale),
                                   "page_faults": "" if result["page_faults"] is None else result["page_faults"]})
                self.csv_file.flush()
        if round_number is None:
            self.scale_down_slow(task, times_ms)
        seconds = time.monotonic() - started
        # The estimate of one round follows the rounds measured so far (the mean of old and new).
        task["round_s"] = seconds if task["round_s"] is None else (task["round_s"] + seconds) / 2
        return seconds

    def estimate_left(self, current=None):
        known = [t["round_s"] for t in self.tasks if t["round_s"] is not None]
        typical = sum(known) / len(known) if known else 0.0
        left = 0.0
        for task in self.tasks:
            rounds = max(0, self.args.warmups - task["warmups_done"]) + max(0, task["pairs"] - task["rounds_done"])
            left += rounds * (task["round_s"] if task["round_s"] is not None else typical)
        return left

    def progress(self, task, index, what):
        elapsed = time.monotonic() - self.started
        log(f"[{task['arch']}] {task['name']} ({index + 1}/{len(self.tasks)}, {task['category']}): {what}"
            f" | elapsed {duration(elapsed)}, left ~{duration(self.estimate_left())}")

    def calibrate(self):
        """The first warm-up round of every workload, timed, then the pairs scaled to the budget."""
        budget = self.args.time_budget * 60
        log(f"bench: timing one warm-up round of each of {len(self.tasks)} workloads for the "
            f"{self.args.time_budget:g} min budget")
        for index, task in enumerate(self.tasks):
            self.run_round(task, 0, None)
            task["warmups_done"] = 1
            self.progress(task, index, f"warm-up 1 of {self.args.warmups}")
        elapsed = time.monotonic() - self.started
        per_round = sum(t["round_s"] for t in self.tasks)
        fixed = per_round * max(0, self.args.warmups - 1)
        planned = elapsed + fixed + per_round * self.args.pairs
        if planned <= budget:
            log(f"bench: estimated total {duration(planned)}, within the budget of {duration(budget)}")
            return
        fit = math.floor((budget - elapsed - fixed) / per_round) if per_round > 0 else self.args.pairs
        pairs = max(MIN_PAIRS, min(self.args.pairs, fit))
        for task in self.tasks:
            task["pairs"] = pairs
        total = elapsed + fixed + per_round * pairs
        log(f"bench: WARNING {self.args.pairs} pairs would take about {duration(planned)}, over the "
            f"{duration(budget)} budget: running {pairs} pairs per workload instead "
            f"(estimated total {duration(total)})")
        if total > budget * 1.05:
            log(f"bench: WARNING even {MIN_PAIRS} pairs exceed the budget: narrow --workloads or lower --scale")

    def measure(self):
        for index, task in enumerate(self.tasks):
            while task["warmups_done"] < self.args.warmups and task["active"]:
                self.run_round(task, task["warmups_done"], None)
                task["warmups_done"] += 1
                self.progress(task, index, f"warm-up {task['warmups_done']} of {self.args.warmups}")
            task["warmups_done"] = self.args.warmups
            while task["rounds_done"] < task["pairs"] and task["active"]:
                # Measured round r uses order r - 1: with two allocators, A first in odd pairs.
                self.run_round(task, task["rounds_done"], task["rounds_done"] + 1)
                task["rounds_done"] += 1
                self.progress(task, index, f"pair {task['rounds_done']} of {task['pairs']}")
            task["rounds_done"] = task["pairs"]

    def meta(self):
        args = self.args
        return {
            "mode": args.mode, "arches": args.arches, "allocators": args.allocator_list,
            "reference": args.reference, "warmups": args.warmups, "pairs_requested": args.pairs,
            "scale": args.scale, "time_budget_min": args.time_budget,
            "bench_cmd": args.bench_cmd or f"scripts/wine-run.sh build/{{arch}} {args.bench_exe}",
            "elapsed_s": round(time.monotonic() - self.started, 1),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
            "workloads": [{k: t[k] for k in ("arch", "name", "category", "threads", "allocators", "pairs")}
                          for t in self.tasks],
            "failures": self.failures, "retried": self.retried, "skipped": self.args.arch_notes + self.skipped,
            "scaled": list(self.scaled.values()),
        }

    def run(self):
        self.setup_prefixes()
        self.plan()
        log(f"bench: {self.args.mode} mode, {len(self.tasks)} workload runs on {','.join(self.args.arches)}, "
            f"allocators {','.join(self.args.allocator_list)}, {self.args.warmups} warm-up(s) + "
            f"{self.args.pairs} pairs, output {self.args.out}")
        for note in self.args.arch_notes + self.skipped:
            log(f"bench: skipped {note}")
        self.open_csv()
        try:
            if self.args.time_budget > 0:
                self.calibrate()
            self.measure()
        finally:
            self.csv_file.close()
            with open(os.path.join(self.args.out, "meta.json"), "w") as f:
                json.dump(self.meta(), f, indent=1)
                f.write("\n")


def on_signal(number, _frame):
    raise SystemExit(128 + number)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.peer_spec:
        if len(args.arches) != 1 or args.peer_spec not in PEERS:
            raise SystemExit(f"bench: --peer-spec takes one of {', '.join(PEERS)} and one --arch")
        if args.peer_spec not in peers_available(args.peers, args.arches[0]):
            return 1
        print(resolve_spec(args.peer_spec, args.arches[0], args.peers))
        return 0
    # A termination must still stop the wineservers (the finally below), as a shell trap would.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    runner = Runner(args)
    try:
        runner.run()
    finally:
        runner.cleanup_prefixes()
    markdown = report.generate(args.out)
    print(markdown)
    log(f"bench: done in {duration(time.monotonic() - runner.started)}; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
