#!/usr/bin/env python3
"""Compiles a Free Pascal program that uses pascal/fm5mm.pas for win32 or win64, runs it under Wine
beside the build tree's DLL, and checks what it printed and the event log fm5 wrote.

Modes:
  release  stress.pas with FM5_LEAK_REPORT=1: every CHECK line agrees, the string-list hashes match
           the ones computed here, and the log holds exactly one leak: the program's deliberate one.
  debug    the same with FM5_DEBUG=1 (debug mode from the start, leak report on): the leak is
           reported as a debug block of the requested size.
  fa       fa_loaded.pas, which does not name fm5mm: compiled with -Fafm5mm, it must run on fm5 and
           leave no leak (FM5_LEAK_REPORT=1 and no log file at all).
The toolchain is the one scripts/setup-fpc.sh builds; when it is missing the test fails.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def toolchain(bits, fpc_dir):
    if bits == 64:
        compiler = shutil.which("ppcx64")
        units = os.path.join(fpc_dir, "units", "x86_64-win64")
        target = "-Twin64"
    else:
        compiler = os.path.join(fpc_dir, "bin", "ppcross386")
        units = os.path.join(fpc_dir, "units", "i386-win32")
        target = "-Twin32"
    hint = ("install fpc, fp-utils and fpc-source-3.2.2 and run scripts/setup-fpc.sh "
            "(make and make test run it through scripts/setup.sh)")
    if not compiler or not os.access(compiler, os.X_OK):
        fail(f"the Free Pascal compiler for win{bits} is missing ({compiler or 'ppcx64 not on PATH'}): {hint}")
    if not os.path.isfile(os.path.join(units, "classes.ppu")):
        fail(f"the Free Pascal win{bits} units are missing ({units}): {hint}")
    return compiler, units, target


def compile_program(args, name):
    compiler, units, target = toolchain(args.bits, args.fpc_dir)
    unit_out = os.path.join(args.work_dir, name)
    os.makedirs(unit_out, exist_ok=True)
    exe = os.path.join(args.bin_dir, name + ".exe")
    # -n: no fpc.cfg (it names the Linux units); -vwn: warnings and notes shown; -Sew: warnings fail.
    command = [compiler, "-n", target, "-vwn", "-Sew", "-O2", "-Fu" + units, "-Fu" + args.unit_dir,
               "-FU" + unit_out, "-FE" + args.bin_dir, "-o" + exe]
    if args.mode == "fa":
        command.append("-Fafm5mm")
    command.append(args.source)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    shown = [line for line in result.stdout.splitlines()
             if re.search(r"(Warning|Note|Error|Fatal)", line)]
    for line in shown:
        print("fpc: " + line)
    if result.returncode != 0 or not os.path.isfile(exe):
        print(result.stdout)
        fail(f"compiling {args.source} failed ({result.returncode})")
    return exe


# ---- the program's deterministic data, recomputed independently ------------------------------------

def fnv(hash_value, data):
    for byte in data:
        hash_value = ((hash_value ^ byte) * 16777619) & 0xFFFFFFFF
    return hash_value


def string_list_hashes(count):
    state = 12345

    def next_random():
        nonlocal state
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        return (state >> 8) & 0xFFFFFF

    keys = []
    for _ in range(count):
        length = 2 + next_random() % 39
        keys.append(b"k" + bytes(ord("a") + next_random() % 26 for _ in range(length)))
    keys.sort()
    sorted_hash = 2166136261
    for key in keys:
        sorted_hash = fnv(sorted_hash, key + b"\n")
    kept = [key for index, key in enumerate(keys) if index % 3 != 0]
    kept_hash = 2166136261
    for key in kept:
        kept_hash = fnv(kept_hash, key + b"\n")
    return sorted_hash, len(kept), kept_hash


# ---- the run -----------------------------------------------------------------------------------------

def run(args, exe, log_path, program_args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FM5_") and k != "FastMMLogFilePath"}
    env["FM5_LOG"] = "Z:" + os.path.abspath(log_path).replace("/", "\\")
    if args.mode == "debug":
        env["FM5_DEBUG"] = "1"
    else:
        env["FM5_LEAK_REPORT"] = "1"
    if os.path.exists(log_path):
        os.remove(log_path)
    command = args.emulator.split("|") + [exe] + program_args
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            timeout=args.timeout, errors="replace", text=True)
    print(result.stdout)
    if result.returncode != 0:
        fail(f"{os.path.basename(exe)} exited with {result.returncode}")
    return result.stdout.splitlines(), env["FM5_LOG"]


def parse_output(lines):
    checks, notes, values = {}, {}, {}
    for line in lines:
        words = line.split()
        if not words:
            continue
        if words[0] == "CHECK" and len(words) == 4:
            if words[1] in checks:
                fail(f"check {words[1]} printed twice")
            checks[words[1]] = (int(words[2]), int(words[3]))
        elif words[0] == "NOTE" and len(words) == 3:
            notes[words[1]] = int(words[2])
        elif words[0] in ("SORTED", "DELETED", "LEAK", "LOGFILE", "DONE"):
            values[words[0]] = words[1:]
    return checks, notes, values


def log_entries(log_path):
    if not os.path.exists(log_path):
        return []
    with open(log_path, encoding="utf-8-sig", errors="replace") as f:
        text = f.read()
    parts = re.split(r"^-{32}\d{4}/\d\d/\d\d \d\d:\d\d:\d\d-{32}\r?$", text, flags=re.M)
    return [part.strip() for part in parts if part.strip()]


REQUIRED_CHECKS = [
    "memory_manager_set", "leak_report_on_shutdown",
    "fm5_owns_ansistring", "fm5_owns_unicodestring", "fm5_owns_dynamic_array", "fm5_owns_object",
    "usage_grows_while_held", "committed_grows_while_held", "usage_shrinks_after_free",
    "fpc_heap_status_used", "heap_status_allocated",
    "reallocmem_nil_allocates", "reallocmem_grows_medium", "reallocmem_grows_large",
    "reallocmem_zero_frees", "reallocmem_nil_zero", "freemem_returns_size", "allocmem_zeroed",
    "freememsize_zero_keeps_block", "previous_block_not_fm5", "previous_block_memsize",
    "previous_block_resized_by_previous", "previous_manager_calls",
    "walk_found_block", "walk_usable_size", "sizeof_heap_status", "sizeof_usage_summary",
    "sizeof_walk_block_info", "sizeof_event", "event_kind", "event_pointer", "aligned_64",
    "debug_mode_active", "debug_scan_intact", "pending_frees_drained",
    "threads_consumed_equals_produced", "threads_cross_thread_frees",
    "thread0_hash_equals_sequential", "thread1_hash_equals_sequential",
    "thread2_hash_equals_sequential", "thread3_hash_equals_sequential", "sequential_mismatches",
    "register_expected_leak",
]


def check_stress(args, lines, log_path, windows_log):
    checks, notes, values = parse_output(lines)
    problems = []
    for name, (got, want) in checks.items():
        if got != want:
            problems.append(f"check {name}: got {got}, expected {want}")
    for name in REQUIRED_CHECKS:
        if name not in checks:
            problems.append(f"check {name} was not printed")
    if "DONE" not in values:
        problems.append("the program did not reach DONE")
    if values.get("LOGFILE") != [windows_log]:
        problems.append(f"FastMM_GetEventLogFilename is {values.get('LOGFILE')}, FM5_LOG is {windows_log}")
    want_debug = 1 if args.mode == "debug" else 0
    if notes.get("debug_mode_at_start") != want_debug:
        problems.append(f"debug mode at start is {notes.get('debug_mode_at_start')}, expected {want_debug}")

    # The string-list hashes, recomputed here from the same generator.
    count = 5000 * args.scale
    sorted_hash, kept, kept_hash = string_list_hashes(count)
    if values.get("SORTED") != [str(count), str(sorted_hash)]:
        problems.append(f"sorted TStringList: printed {values.get('SORTED')}, computed {[count, sorted_hash]}")
    if values.get("DELETED") != [str(kept), str(kept_hash)]:
        problems.append(f"TStringList after deletes: printed {values.get('DELETED')}, computed {[kept, kept_hash]}")

    # The leak report: the one deliberate leak, and nothing else (the registered one is expected).
    leak = values.get("LEAK")
    if not leak or len(leak) != 3:
        fail("the program printed no LEAK line")
    address, requested, mem_size = (int(v) for v in leak)
    if requested != args.leak_size or mem_size < requested:
        problems.append(f"leak block: requested {requested}, MemSize {mem_size}")
    size = requested if args.mode == "debug" else mem_size
    entries = log_entries(log_path)
    blocks = [e for e in entries if e.startswith("fm5: Memory leak:") and "Pointer: 0x" in e]
    summaries = [e for e in entries if re.match(r"fm5: Memory leak: \d+ blocks? (was|were) never freed", e)]
    others = [e for e in entries if e not in blocks and e not in summaries]
    for entry in others:
        problems.append("unexpected log entry: " + entry.splitlines()[0])
    if len(blocks) != 1:
        problems.append(f"{len(blocks)} leaked blocks in the log, expected 1")
    else:
        block = blocks[0]
        pointer = int(re.search(r"Pointer: 0x([0-9A-Fa-f]+)", block).group(1), 16)
        if pointer != address:
            problems.append(f"the leaked block is at {pointer:#x}, the program leaked {address:#x}")
        if args.mode == "debug":
            if f"Block: user size {size}," not in block:
                problems.append(f"the leaked debug block does not show user size {size}: {block.splitlines()[:2]}")
        elif not re.search(rf"\. Size: {size}\. ", block):
            problems.append(f"the leaked block does not show size {size}: {block.splitlines()[0]}")
    if len(summaries) != 1:
        problems.append(f"{len(summaries)} leak summaries in the log, expected 1")
    else:
        summary = summaries[0]
        sizes = re.findall(r"^\s+(\d+) bytes: (\d+)$", summary, flags=re.M)
        if not summary.startswith("fm5: Memory leak: 1 block was never freed.") or sizes != [(str(size), "1")]:
            problems.append("leak summary is not one block of %d bytes: %r" % (size, summary))
    return problems


def check_fa(args, lines, log_path):
    checks, notes, values = parse_output(lines)
    problems = [f"check {name}: got {got}, expected {want}"
                for name, (got, want) in checks.items() if got != want]
    for name in ("memory_manager_set", "fm5_owns_string", "fm5_owns_object", "fm5_owns_array",
                 "leak_report_on_shutdown"):
        if name not in checks:
            problems.append(f"check {name} was not printed")
    if "DONE" not in values:
        problems.append("the program did not reach DONE")
    for entry in log_entries(log_path):
        problems.append("unexpected log entry (no leak and no event expected): " + entry.splitlines()[0])
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("release", "debug", "fa"), required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--bits", type=int, choices=(32, 64), required=True)
    parser.add_argument("--fpc-dir", required=True)
    parser.add_argument("--unit-dir", required=True)
    parser.add_argument("--bin-dir", required=True, help="the build tree's bin/, where the DLL is")
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--emulator", required=True, help="CMAKE_CROSSCOMPILING_EMULATOR, joined by |")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--leak-size", type=int, default=777)
    parser.add_argument("--timeout", type=int, default=500)
    args = parser.parse_args()

    if not os.path.isfile(os.path.join(args.bin_dir, f"fm5_{args.bits}.dll")):
        fail(f"fm5_{args.bits}.dll is not in {args.bin_dir}")
    exe = compile_program(args, args.name)
    log_path = os.path.join(args.work_dir, args.name + "_events.log")
    if args.mode == "fa":
        lines, _ = run(args, exe, log_path, [])
        problems = check_fa(args, lines, log_path)
    else:
        lines, windows_log = run(args, exe, log_path, [str(args.scale), str(args.leak_size)])
        problems = check_stress(args, lines, log_path, windows_log)
    for problem in problems:
        print("FAIL: " + problem)
    if problems:
        sys.exit(1)
    print(f"PASS: {args.name} (win{args.bits}, {args.mode})")


if __name__ == "__main__":
    main()
