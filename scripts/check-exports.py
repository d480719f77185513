#!/usr/bin/env python3
"""Checks fm5's binaries against the public header, on the host (no Wine).

  check-exports.py dll --readobj llvm-readobj --header include/fm5.h --def win32/fm5_32.def fm5_32.dll
      The DLL exports exactly the functions that fm5.h declares, undecorated, and imports from
      KERNEL32.dll and msvcrt.dll only. The .def must list the same names.

  check-exports.py dll --readobj llvm-readobj --def borlndmm/BorlndMM_32.def BorlndMM.dll
      Without --header: the DLL exports exactly the names the .def lists (BorlndMM.dll's), with the
      same import rule.

  check-exports.py msvc-lib --readobj llvm-readobj --header include/fm5.h --bits 32 fm5_32.lib
      The MSVC import library has one member per header function, with the symbols a compiler
      references (i686: _name and __imp__name, the cdecl decoration) and an import by the plain name.

Exits 1 with the differences printed when a check fails.
"""

import argparse
import re
import subprocess
import sys

ALLOWED_IMPORTS = {"kernel32.dll", "msvcrt.dll"}


def header_functions(path):
    """The names declared as `FM5_CALL name(` or `FM5_CALL *name(` (functions returning a pointer).

    A typedef of a callback reads `(FM5_CALL *Name)(`: a ')' follows its name, so it is not taken.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    names = re.findall(r"\bFM5_CALL\s*\*?\s*([A-Za-z_]\w*)\s*\(", text)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        fail([f"declared more than once in {path}: {', '.join(duplicates)}"])
    if not names:
        fail([f"no FM5_CALL function found in {path}"])
    return set(names)


def def_exports(path):
    names = set()
    in_exports = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split(";", 1)[0].strip()
            if not line:
                continue
            if line.upper() == "EXPORTS":
                in_exports = True
            elif in_exports:
                # `name`, `name = internal` or `"@mangled$name" = internal`.
                names.add(line.split("=", 1)[0].strip().strip('"'))
    return names


def readobj(tool, *args):
    result = subprocess.run([tool, *args], capture_output=True, text=True)
    if result.returncode != 0:
        fail([f"{tool} {' '.join(args)} failed:", result.stderr.strip()])
    return result.stdout


def compare(kind, expected, actual):
    """Differences between two name sets, as lines of text (empty when equal)."""
    problems = []
    missing = sorted(expected - actual)
    extra = sorted(actual - expected)
    if missing:
        problems.append(f"{kind}: missing {len(missing)}: {' '.join(missing)}")
    if extra:
        problems.append(f"{kind}: unexpected {len(extra)}: {' '.join(extra)}")
    return problems


def fail(problems):
    for p in problems:
        print("FAIL:", p)
    sys.exit(1)


def check_dll(args):
    problems = []
    if args.header:
        wanted, source = header_functions(args.header), "fm5.h"
        if args.def_file:
            problems += compare(f"{args.def_file} vs fm5.h", wanted, def_exports(args.def_file))
    elif args.def_file:
        wanted, source = def_exports(args.def_file), args.def_file
    else:
        fail(["dll needs --header, --def or both"])

    exports = set()
    for block in re.findall(r"^Export \{\n(.*?)^\}", readobj(args.readobj, "--coff-exports", args.binary),
                            flags=re.M | re.S):
        name = re.search(r"^\s*Name: (\S+)$", block, flags=re.M)
        ordinal = re.search(r"^\s*Ordinal: (\d+)$", block, flags=re.M)
        # An export by ordinal only is an extra too.
        exports.add(name.group(1) if name else f"<ordinal {ordinal.group(1) if ordinal else '?'}>")
    problems += compare(f"DLL exports vs {source}", wanted, exports)

    imports_text = readobj(args.readobj, "--coff-imports", args.binary)
    imported_dlls = re.findall(r"^(?:Delay)?Import \{\s*\n\s*Name: (\S+)$", imports_text, flags=re.M)
    print(f"{args.binary}: {len(exports)} exports; imports from: {', '.join(imported_dlls) or 'none'}")
    bad = [d for d in imported_dlls if d.lower() not in ALLOWED_IMPORTS]
    if bad:
        problems.append(f"imports from DLLs other than KERNEL32.dll and msvcrt.dll: {', '.join(bad)}")
    if not any(d.lower() == "kernel32.dll" for d in imported_dlls):
        problems.append("no import from KERNEL32.dll: the import table was not read correctly")

    if problems:
        fail(problems)
    print(f"OK: the {len(wanted)} names of {source} are exported as written there, nothing else")


def check_msvc_lib(args):
    wanted = header_functions(args.header)
    text = readobj(args.readobj, args.binary)
    # A short import member: "Format: COFF-import-file", then Type, "Name type", and its symbols.
    members = re.findall(r"Format: COFF-import-file\n(.*?)(?=\n\s*\n|\nFile: |\Z)", text, flags=re.S)
    prefix = "_" if args.bits == 32 else ""
    # How the loader-side name derives from the symbol: i386 strips the cdecl '_' ("noprefix");
    # x64 has no decoration and imports the symbol name itself ("name").
    expected_name_type = "noprefix" if args.bits == 32 else "name"
    problems = []
    found = set()
    for member in members:
        symbols = set(re.findall(r"^Symbol: (\S+)$", member, flags=re.M))
        name_type = re.search(r"^Name type: (\S+)$", member, flags=re.M)
        name_type = name_type.group(1) if name_type else "?"
        code = [s for s in symbols if not s.startswith("__imp_")]
        if len(code) != 1:
            problems.append(f"member with unexpected symbols: {sorted(symbols)}")
            continue
        symbol = code[0]
        if not symbol.startswith(prefix):
            problems.append(f"{symbol}: lacks the cdecl '_' decoration")
            continue
        name = symbol[len(prefix):]
        found.add(name)
        if f"__imp_{symbol}" not in symbols:
            problems.append(f"{symbol}: no __imp_{symbol}")
        if name_type != expected_name_type:
            problems.append(f"{symbol}: name type {name_type}, expected {expected_name_type}")
    problems += compare(f"{args.binary} vs fm5.h", wanted, found)
    if problems:
        fail(problems)
    example = f"{prefix}FastMM_GetMem" if "FastMM_GetMem" in wanted else sorted(wanted)[0]
    print(f"OK: {args.binary}: {len(found)} imports, e.g. {example} and __imp_{example}, "
          f"imported by the undecorated name (name type {expected_name_type})")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    dll = sub.add_parser("dll")
    dll.add_argument("--def", dest="def_file")
    lib = sub.add_parser("msvc-lib")
    lib.add_argument("--bits", type=int, choices=(32, 64), required=True)
    dll.add_argument("--header")
    lib.add_argument("--header", required=True)
    for p in (dll, lib):
        p.add_argument("--readobj", default="llvm-readobj")
        p.add_argument("binary")
    args = parser.parse_args()
    if args.command == "dll":
        check_dll(args)
    else:
        check_msvc_lib(args)


if __name__ == "__main__":
    main()
