/* The small-block reallocation rules (FastMM5's, with fm5's growth and shrink rules), shared by the C
 * ReallocMem and the NASM small-block fast path. */
#ifndef FM5_REALLOC_RULES_H
#define FM5_REALLOC_RULES_H

#include "base/platform.h"

/* A small block that grows and does not fit moves to a block of exactly the new size (its size class
 * rounds it up), as mimalloc's do. FastMM5 asks for twice the size plus 32 bytes, so that a string
 * grown a character at a time moves rarely; fm5 departs from it because those spare bytes are pages a
 * program touches. On the 2-core AMD EPYC VM of 2026-12-05, where a fresh page costs some 12 us
 * (Win64, scale 0.1, page faults in the allocator): 2x + 32 gave small_upsize 12,390 and
 * realloc_medium 15,986 (at 4631644); a quarter more than the old size (3c6d8fb's rule, at 7f2c061)
 * 9,893 and 14,672; the new size 9,893 and 13,286. Against the quarter, three runs of 21 pairs:
 * realloc_medium +7.0 % [+5.3, +12.2], +9.9 % [+3.1, +12.8] and +13.3 % [+9.7, +17.9] faster,
 * realloc_small +5.7 % [+0.2, +11.1], +5.2 % [-4.9, +29.3] and +5.7 % [+5.1, +9.3], no reallocating
 * row's interval wholly below 0 in any run (small_upsize -0.7 % [-2.3, +2.5], -0.9 % [-2.9, +4.7],
 * +4.0 % [-0.9, +4.5]). A block grown a byte at a time from 1 to 2,600 bytes moves 50 times instead
 * of 18 (a class is 16 to 128 bytes wide), and was not slower for it: +18.0 % [-4.3, +33.6], 15
 * pairs. Every mover asks for new_size's class: C's (memory_manager.c's move_small_block,
 * release_engine.c's fm5_release_realloc_small_block) and the asm ReallocMem of both architectures,
 * which takes the newest cached block of that class (asm/win64/, asm/win32/small_realloc_mem.asm). */

/* A small block that moves copies this many bytes or more with `rep movsb` when the processor has fast
 * strings (fm5_cpu_has_fast_strings, base/os.h), 16 bytes at a time below it or without them: the C
 * mover (memory_manager.c's copy_small_block) and the asm ReallocMem of both architectures. Against
 * the 16-byte loop alone (the Zen 3 VM, 2026-12-07): realloc_medium, whose blocks move between the
 * 1-2.6 KB classes, Win64 +2.9 % [-0.1, +4.5] and Win32 +6.0 % [+2.0, +9.4] faster (15 pairs, scale
 * 0.2), +3.7 % [+1.4, +4.6] and +5.0 % [+1.0, +7.9] (21 pairs, with 64-byte function starts on the new
 * side only); every other single-threaded row within its noise (11 pairs, scale 0.1, no interval wholly
 * below -3 %). From 256 bytes, st_realloc_use (most of whose moves are shorter) was 3.7 % [1.6, 6.0]
 * slower on Win64. */
#define FM5_SMALL_COPY_BY_STRING_MINIMUM 1024u

/* A small block keeps its place when shrunk while new * FM5_SMALL_DOWNSIZE_FACTOR + this >= usable; a
 * smaller new size moves it to its own class. FastMM5 keeps it down to a quarter (a factor of 4); fm5
 * moves it once it would be less than about a third used, for the same reason as above: the bytes a
 * shrunk block keeps are pages. Against the quarter (Win64, the 2-core AMD EPYC VM, 2026-12-05):
 * tiny_downsize +19.0 % [+0.8, +56.0] and verysmall_downsize +18.4 % [+9.9, +23.9] faster at scale
 * 0.1 (21 pairs; peak working set 15.7 and 26.0 MiB against 17.1 and 30.7), +24.4 % [+17.4, +28.5]
 * and +31.5 % [+22.7, +39.5] at scale 0.5 (31 pairs). The price is paid where a block shrinks and
 * grows back in turn on pages already touched: realloc_small -6.9 % [-9.1, +0.1] and st_tiny_realloc
 * -7.5 % [-11.4, -1.6] at scale 0.1, -3.8 % [-10.2, -1.4] and -1.7 % [-5.2, +5.4] at scale 0.5. Half
 * (mimalloc's rule) cost realloc_small 13.5 % [10.0, 20.2] and st_tiny_realloc 6.1 % [2.0, 14.9] at
 * scale 0.5, and moving a shrunk block to a quarter more than its new size cost more, not less. The
 * 64 bytes keep a block of up to 64 usable bytes where it is at any size. asm/ multiplies by the
 * factor in an address (an index scale, or x plus a scaled x): 2, 3, 4, 5, 8 or 9. */
#define FM5_SMALL_DOWNSIZE_FACTOR 3u
#define FM5_SMALL_DOWNSIZE_CHECK_ADDER 64u

/* The in-place small-block rule (FastMM5 PR #98's fast path, with fm5's factor): true when a small
 * block of `usable` bytes serves `new_size` where it is. */
FM5_INLINE int fm5_small_realloc_stays(size_t new_size, size_t usable)
{
    return new_size <= usable && new_size * FM5_SMALL_DOWNSIZE_FACTOR + FM5_SMALL_DOWNSIZE_CHECK_ADDER >= usable;
}

#endif
