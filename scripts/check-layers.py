#!/usr/bin/env python3
"""Checks that fm5's layers call only downward (docs/design.md, "Layers").

  check-layers.py SOURCE_DIR [--objects OBJECT_DIR --nm LLVM_NM]

src/ has one folder per layer, lowest first: base, blocks, debug, reports, api. Three rules:
  1. includes: a file in src/L/ includes "fm5.h" (the public interface, include/) or "M/name.h" with
     M at or below L, and that header exists;
  2. calls: with --objects (the DLL's object files, one per source), every symbol an object uses from
     another of fm5's objects is defined in a layer at or below its own: this catches a call that a
     hand-written declaration would hide from rule 1;
  3. the OS: Windows API calls appear only in files named *_windows.c (base/os_windows.c, the OS door
     of the DLLs, and the stack capture, x64 unwind data and symbols of debug/) and POSIX calls only
     in files named *_posix.c (base/os_posix.c, the host build's door, and debug/'s stack capture);
     src/api/startup.c, where the loader enters (DllMain or a constructor), may name both.
Prints every violation and exits 1 if there is any."""
import argparse
import os
import re
import subprocess
import sys

LAYERS = ["base", "blocks", "debug", "reports", "api"]
RANK = {name: i for i, name in enumerate(LAYERS)}
ENTRY_FILE = "api/startup.c"
# Windows API functions fm5 uses (or could be tempted to); a call outside *_windows.c is a violation.
WINDOWS_API = re.compile(
    r"\b(Virtual(Alloc|Free|Query|Protect)(Ex)?|CreateFile[AW]?|WriteFile|ReadFile|CloseHandle|DeleteFile[AW]?|"
    r"GetEnvironmentVariable[AW]?|SwitchToThread|Sleep|GetTickCount(64)?|GetCurrentThreadId|GetLocalTime|"
    r"LoadLibrary[AW]?|GetProcAddress|GetModuleFileName[AW]?|OutputDebugString[AW]?|IsProcessorFeaturePresent|"
    r"DebugBreak|TerminateProcess|MultiByteToWideChar|WideCharToMultiByte|RtlCaptureStackBackTrace|MessageBox[AW]?)\s*\(")
# The same for the POSIX and C library calls of the host build's OS layer, outside *_posix.c.
POSIX_API = re.compile(
    r"\b(mmap|munmap|mprotect|madvise|mincore|pthread_[a-z_]+|sched_yield|syscall|clock_gettime|nanosleep|"
    r"open|close|read|write|unlink|readlink|getenv|localtime_r|raise|_exit|dladdr|dlopen|dlsym|backtrace|"
    r"sigaction)\s*\(")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def source_files(src):
    for layer in sorted(os.listdir(src)):
        folder = os.path.join(src, layer)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith((".c", ".h")):
                yield layer, name, os.path.join(folder, name)


def check_sources(root):
    src = os.path.join(root, "src")
    problems = []
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if os.path.isfile(path):
            problems.append(f"src/{entry}: every source belongs in a layer folder ({', '.join(LAYERS)})")
        elif entry not in RANK:
            problems.append(f"src/{entry}/: not a layer ({', '.join(LAYERS)})")
    for layer, name, path in source_files(src):
        if layer not in RANK:
            continue
        where = f"{layer}/{name}"
        text = open(path, encoding="utf-8").read()
        for included in INCLUDE.findall(text):
            if included == "fm5.h":
                continue
            parts = included.split("/")
            if len(parts) != 2 or parts[0] not in RANK:
                problems.append(f"src/{where}: includes \"{included}\": name a layer's header as \"layer/name.h\"")
                continue
            if not os.path.isfile(os.path.join(src, included)):
                problems.append(f"src/{where}: includes \"{included}\", which does not exist")
            elif RANK[parts[0]] > RANK[layer]:
                problems.append(f"src/{where}: includes \"{included}\" from the higher layer {parts[0]}")
        allowed = {"windows": name.endswith("_windows.c") or where == ENTRY_FILE,
                   "posix": name.endswith("_posix.c") or where == ENTRY_FILE}
        for number, line in enumerate(strip_comments(text).split("\n"), 1):
            for system, api in (("windows", WINDOWS_API), ("posix", POSIX_API)):
                match = api.search(line)
                if match and not allowed[system]:
                    problems.append(f"src/{where}:{number}: calls {match.group(1)}: the OS only through base/os.h")
    return problems


def symbols(nm, obj):
    out = subprocess.run([nm, "--no-sort", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[-2] == "U":
            used.add(fields[-1])
        elif len(fields) >= 3 and fields[-2] in "TDBRC" and fields[-2].isupper():
            defined.add(fields[-1])
    return defined, used


def check_objects(objects, nm):
    problems = []
    layer_of_object = {}
    for dirpath, _, files in os.walk(objects):
        for name in files:
            if name.endswith((".c.obj", ".c.o")):
                layer = os.path.basename(dirpath)
                if layer in RANK:
                    layer_of_object[os.path.join(dirpath, name)] = layer
    if not layer_of_object:
        return [f"{objects}: no object files of any layer"]
    definer = {}
    uses = {}
    for obj, layer in layer_of_object.items():
        defined, used = symbols(nm, obj)
        for symbol in defined:
            definer[symbol] = (layer, obj)
        uses[obj] = used
    for obj, used in sorted(uses.items()):
        layer = layer_of_object[obj]
        for symbol in sorted(used):
            if symbol in definer:
                target_layer, target = definer[symbol]
                if RANK[target_layer] > RANK[layer]:
                    problems.append(f"{layer}/{os.path.basename(obj)} uses {symbol} from the higher layer "
                                    f"{target_layer}/{os.path.basename(target)}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", help="the repository's root")
    parser.add_argument("--objects", help="folder holding the DLL's object files (searched recursively)")
    parser.add_argument("--nm", default="llvm-nm")
    args = parser.parse_args()
    problems = check_sources(args.root)
    if args.objects:
        problems += check_objects(args.objects, args.nm)
    for problem in problems:
        print("FAIL:", problem)
    if problems:
        return 1
    print(f"layers: {', '.join(LAYERS)}; every include and call goes downward; the OS only through base/os.h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
