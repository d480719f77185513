#!/usr/bin/env python3
"""Writes the seed inputs of tests/fuzz/corpus/ for fuzz_heap.c, one program per file.

The byte format is fuzz_heap.c's (its header comment and OPS table): an operation byte, then its
arguments. Rerun after a change to that format:  python3 tests/fuzz/make_corpus.py [output folder]
"""
import os
import struct
import sys

# The first byte value of each operation in fuzz_heap.c's OPS table.
GETMEM, BURST, ALLOCMEM, REALLOC, FREE, FREE_RANGE, BAD, QUERY = 0, 6, 7, 9, 13, 17, 18, 20
DEBUG_ON, DEBUG_OFF, SCAN, WALK, FAULT_ON, FAULT_OFF, STATUS = 21, 22, 23, 24, 25, 26, 27
ALIGN, ERASE, SETTINGS, C_API = 28, 29, 30, 31

MAX_SMALL, MAX_MEDIUM, MAX_LARGE = 2622, 558904, 2 << 20
INTERESTING = [0, 1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 46, 47, 48, 62, 63, 64, 65, 126, 127, 128, 254, 255,
               256, 1022, 1023, 1024, 2606, 2607, 2608, 2620, 2621, 2622, 2623, 2624, 2625, 2872, 2873, 3000,
               4096, 65464, 65536, 101176, 101177, 297784, 297785, 558840, 558903, 558904, 558905, 558906]

# Bad pointer kinds and actions (fuzz_heap.c's enum bad_pointer_kind): what = kind + 11 * action.
BAD_KINDS = 11
INTERIOR, INTERIOR_ALIGNED, MISALIGNED, BEFORE, AFTER, FREED, MALLOC, STACK, GLOBAL, NULL, WILD = range(11)
FREE_IT, REALLOC_IT, QUERY_IT = range(3)


def size(n):
    """read_size's encoding of exactly n bytes."""
    if n <= 255:
        return bytes([0x00, n])
    if n <= MAX_SMALL:
        return bytes([0x50]) + struct.pack('<H', n)
    if n <= MAX_MEDIUM:
        return bytes([0xB0]) + struct.pack('<I', n - (MAX_SMALL + 1))
    assert n <= MAX_LARGE
    return bytes([0xF0]) + struct.pack('<I', n - (MAX_MEDIUM + 1))


def interesting(n):
    return bytes([0xA0, INTERESTING.index(n)])


MIXED = bytes([0])


def constant(word):
    return bytes([2]) + struct.pack('<Q', word)


def counter(word):
    return bytes([3]) + struct.pack('<Q', word)


def getmem(slot, n, content=MIXED, encoded=None):
    return bytes([GETMEM, slot]) + (encoded or size(n)) + content


def allocmem(slot, n, content=MIXED):
    return bytes([ALLOCMEM, slot]) + size(n) + content


def realloc_to(slot, n):
    return bytes([REALLOC, slot, 0]) + size(n)


def realloc_grow(slot, by):
    return bytes([REALLOC, slot, 1]) + struct.pack('<H', by)


def realloc_shrink(slot, by):
    return bytes([REALLOC, slot, 2]) + struct.pack('<H', by)


def realloc_double(slot):
    return bytes([REALLOC, slot, 3 | 4])


def realloc_half(slot):
    return bytes([REALLOC, slot, 3])


def free(slot):
    return bytes([FREE, slot])


def burst(slot, count, n, content=MIXED):
    return bytes([BURST, slot, count - 1]) + size(n) + content


def free_range(slot, count, downwards=False):
    return bytes([FREE_RANGE, slot, (count - 1) | (64 if downwards else 0)])


def bad(kind, action, slot=0, offset=0, extra=b''):
    return bytes([BAD, kind + BAD_KINDS * action, slot]) + struct.pack('<H', offset) + extra


def query(slot):
    return bytes([QUERY, slot])


def walk(flags=0):
    return bytes([WALK, flags])


def fault_nth(nth, kinds=0):
    return bytes([FAULT_ON, kinds & 7, nth - 1])


def fault_random(rate, kinds=0):
    return bytes([FAULT_ON, (kinds & 7) | 8 | 16, rate])


def align(flags):
    return bytes([ALIGN, flags])


def erase(flags):
    return bytes([ERASE, flags])


def settings(what, value=0):
    return bytes([SETTINGS, what, value])


def c_api(what, slot, rest=b''):
    return bytes([C_API, what, slot]) + rest


SEEDS = {
    'small_blocks': b''.join([getmem(i, n) for i, n in enumerate([0, 1, 16, 17, 100, 255])] +
                             [getmem(10, 1000), getmem(11, 2622), query(0), query(10), query(11)] +
                             [free(i) for i in (1, 3, 5, 10)] + [getmem(1, 48), getmem(3, 48)]),
    'every_kind': b''.join([getmem(0, 2622), getmem(1, 2623), getmem(2, 100000), getmem(3, 558904),
                            getmem(4, 558905), getmem(5, 2 << 20), walk(0), walk(1), bytes([STATUS]),
                            query(2), query(4), free(1), free(4), walk(2), bytes([STATUS])]),
    'interesting_sizes': b''.join(bytes([GETMEM, i]) + interesting(n) + MIXED
                                  for i, n in enumerate(INTERESTING[:40])) + bytes([STATUS]) + walk(0),
    'alloc_mem': b''.join([allocmem(0, 0), allocmem(1, 33), allocmem(2, 2000), allocmem(3, 5000),
                           allocmem(4, 300000), allocmem(5, 700000), free(0), free(2), free(4),
                           allocmem(0, 33), allocmem(2, 2000), allocmem(4, 300000)]),
    'realloc': b''.join([getmem(0, 10), realloc_to(0, 2000), realloc_to(0, 3000), realloc_grow(0, 4000),
                         realloc_to(0, 500000), realloc_to(0, 600000), realloc_grow(0, 65535),
                         realloc_double(0), realloc_half(0), realloc_shrink(0, 1000), realloc_to(0, 100),
                         realloc_to(0, 0), query(0), getmem(1, 50000), realloc_shrink(1, 30000),
                         realloc_grow(1, 20000), getmem(2, 5000), realloc_grow(1, 4000), query(1)]),
    'bad_pointers': b''.join([getmem(0, 64), getmem(1, 5000), getmem(2, 600000), getmem(3, 0)] +
                             [bad(kind, action, slot=kind % 3, offset=17 * kind + 3,
                                  extra=(struct.pack('<Q', 0x7F1234567890) if kind == WILD else b'') +
                                  (size(40) if action == REALLOC_IT else b''))
                              for action in range(3) for kind in range(BAD_KINDS)] + [walk(0)]),
    'double_free': b''.join([getmem(0, 32), getmem(1, 4000), getmem(2, 800000), free(0), free(1), free(2),
                             bad(FREED, FREE_IT, offset=0), bad(FREED, FREE_IT, offset=1),
                             bad(FREED, FREE_IT, offset=2), bad(FREED, REALLOC_IT, offset=1, extra=size(10)),
                             bad(FREED, QUERY_IT, offset=0), getmem(0, 32), bad(FREED, FREE_IT, offset=0)]),
    'debug_mode': b''.join([getmem(0, 100), bytes([DEBUG_ON]), getmem(1, 100), getmem(2, 5000),
                            getmem(3, 700000), allocmem(4, 60), realloc_to(0, 200), realloc_to(1, 50),
                            realloc_to(2, 9000), query(1), query(3), bytes([SCAN]), free(1),
                            bad(FREED, FREE_IT, offset=0), bad(BEFORE, FREE_IT, slot=2, offset=3),
                            bytes([SCAN]), walk(0), bytes([DEBUG_OFF]), realloc_to(2, 100), free(3),
                            bytes([SCAN]), walk(1), bytes([STATUS])]),
    'debug_settings': b''.join([bytes([DEBUG_ON, DEBUG_ON]), settings(4, 0), getmem(0, 40), settings(4, 64),
                                getmem(1, 40), settings(2, 4), getmem(2, 3000), settings(2, 8),
                                getmem(3, 30), settings(2, 0), free(2), free(3), getmem(2, 3000),
                                bytes([SCAN, DEBUG_OFF, SCAN, DEBUG_OFF]), free(0), free(1), bytes([SCAN])]),
    'walks': b''.join([getmem(i, n) for i, n in enumerate([8, 400, 2622, 3000, 90000, 558904, 600000])] +
                      [walk(f) for f in (0, 1, 2, 3, 4 | (1 << 3), 4 | (2 << 3), 4 | (4 << 3), 4 | (8 << 3),
                                         4 | (16 << 3), 4 | 2 | (7 << 3))] +
                      [bytes([DEBUG_ON]), getmem(10, 16), getmem(11, 3000), walk(4 | (1 << 3)), bytes([DEBUG_OFF])]),
    'fault_nth': b''.join([fault_nth(1), getmem(0, 700000), getmem(1, 700000), fault_nth(1), getmem(2, 100000),
                           fault_nth(1), getmem(3, 1000), fault_nth(2), realloc_to(0, 1500000), bytes([FAULT_OFF]),
                           walk(0), bytes([STATUS]), fault_nth(1, 2), realloc_grow(0, 60000), bytes([FAULT_OFF])]),
    'fault_random': b''.join([fault_random(255)] +
                             [getmem(i, n) for i, n in enumerate([600000, 3000, 200000, 10, 900000, 2000, 500000])] +
                             [realloc_to(0, 1200000), realloc_to(2, 400000), free(4), bytes([FAULT_OFF]), walk(0),
                              bytes([STATUS])]),
    'fault_unmap': b''.join([getmem(0, 700000), getmem(1, 1000000), settings(0, 2), getmem(2, 300000),
                             fault_nth(1, 4), free(0), fault_nth(1, 4), free(2), fault_nth(1, 4),
                             realloc_to(1, 2000), bytes([FAULT_OFF]), walk(0), bytes([STATUS])]),
    'alignment': b''.join([align(4 | 2), getmem(0, 20), getmem(1, 100), align(4 | 3), getmem(2, 20),
                           allocmem(3, 200), realloc_to(0, 70), align(0x80), align(0x80 | 0x40 | 0x20 | 4),
                           align(3), align(2), getmem(4, 20), align(0x80 | 1), free(0), free(2)]),
    'erase_modes': b''.join([erase(2 | 1), erase(2), getmem(0, 300), getmem(1, 5000), free(0), allocmem(2, 100),
                             erase(1), erase(0), erase(0), bytes([DEBUG_ON]), erase(2), free(1), getmem(3, 64),
                             free(3), bytes([DEBUG_OFF, SCAN])]),
    'settings': b''.join([settings(0, 0), getmem(0, 300000), getmem(1, 300000), free(0), free(1), settings(0, 2),
                          getmem(0, 300000), free(0), settings(1, 0), settings(1, 1), settings(3, 5), settings(5, 0),
                          settings(6), settings(0, 1), walk(0), bytes([STATUS])]),
    'c_api': b''.join([c_api(0, 0, size(100) + MIXED), c_api(1, 1, bytes([5]) + struct.pack('<H', 100)),
                       c_api(2, 0, bytes([1])), c_api(3, 0, bytes([0]) + size(5000)), c_api(4, 2, size(64) + MIXED),
                       c_api(3, 2, bytes([0]) + size(0)), c_api(5, 1), c_api(6, 0), query(0)]),
    'forged_content': b''.join([getmem(0, 2000, constant(0x0020002000200020)),
                                getmem(1, 8000, constant(0x0008000100400000)),
                                getmem(2, 700000, constant(0x0010001000100010)),
                                getmem(3, 1500, counter(0x0005000000000000)),
                                getmem(4, 20000, constant(0x0009000000010040))] +
                               [bad(INTERIOR_ALIGNED, action, slot=s, offset=o,
                                    extra=size(24) if action == REALLOC_IT else b'')
                                for s in range(5) for o in (0, 3, 63) for action in (FREE_IT, REALLOC_IT)] +
                               [walk(0)]),
    # Whole small spans fed and emptied again (the span goes back to the medium manager), and medium
    # spans filled and emptied (a span that is not the feed span goes back to the OS).
    'span_release': b''.join([burst(0, 48, 32), burst(48, 16, 32), free_range(0, 64), burst(0, 40, 2600),
                              free_range(0, 40, downwards=True), burst(0, 12, 450000), burst(12, 12, 450000),
                              free_range(0, 12), walk(0), bytes([STATUS]), free_range(12, 12, downwards=True),
                              settings(0, 2), burst(0, 8, 500000), free_range(0, 8), walk(0)]),
    'span_release_debug': b''.join([bytes([DEBUG_ON]), burst(0, 48, 100), free_range(0, 48), bytes([SCAN]),
                                    burst(0, 12, 300000), bytes([DEBUG_OFF]), burst(12, 12, 300000),
                                    free_range(0, 24), bytes([SCAN]), burst(0, 30, 100), walk(0)]),
    'full_table': b''.join(getmem(i % 64, 16 + (i * 37) % 3000) for i in range(70)) + walk(0) + bytes([STATUS]),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus')
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
        print(f'{name}: {len(data)} bytes')


if __name__ == '__main__':
    main()
