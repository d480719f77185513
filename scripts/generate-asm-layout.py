#!/usr/bin/env python3
"""Turns the FM5_LAYOUT lines of the compiled asm/layout_constants.c into NASM %defines.
   generate-asm-layout.py <compiler assembly output> <fm5_layout.inc>"""
import re
import sys


def main():
    source, target = sys.argv[1], sys.argv[2]
    found = re.findall(r'FM5_LAYOUT (\w+) \$?(-?\d+)', open(source).read())
    if not found:
        sys.exit(f"{source}: no FM5_LAYOUT lines")
    lines = [f"; Generated from the C headers by scripts/generate-asm-layout.py: do not edit.\n"]
    lines += [f"%define FM5_{name} {value}\n" for name, value in found]
    text = "".join(lines)
    try:
        if open(target).read() == text:
            return  # unchanged: keep the time stamp so that nothing reassembles
    except FileNotFoundError:
        pass
    open(target, "w").write(text)


if __name__ == "__main__":
    main()
