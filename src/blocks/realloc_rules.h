/* FastMM5's reallocation thresholds, shared by the C ReallocMem and the NASM small-block fast path. */
#ifndef FM5_REALLOC_RULES_H
#define FM5_REALLOC_RULES_H

#include "base/platform.h"

/* Growing a small block asks for its usable size plus a quarter (at least the new size), so that a
 * string grown a character at a time moves a bounded number of times per doubling (three; the size
 * classes' own rounding adds the rest). FastMM5 asks for twice the size plus 32 bytes; fm5 departs from
 * it because those spare bytes are pages a program touches: on the 2-core AMD EPYC VM of 2026-12-05,
 * where a fresh page costs some 12 us, the 2x + 32 rule gave small_upsize 12,390 page faults in the
 * allocator against 9,893 with the quarter, and realloc_medium 15,986 against 14,787 (Win64, scale
 * 0.1). The quarter is FastMM5's own medium-block growth rule. */
#define FM5_SMALL_UPSIZE_SHIFT 2u
/* A small block keeps its place when shrunk unless it would be mostly empty: new * 4 + this < usable
 * moves it. */
#define FM5_SMALL_DOWNSIZE_CHECK_ADDER 64u

/* The in-place small-block rule (FastMM5 PR #98): true when a small block of `usable` bytes serves
 * `new_size` where it is. */
FM5_INLINE int fm5_small_realloc_stays(size_t new_size, size_t usable)
{
    return new_size <= usable && new_size * 4 + FM5_SMALL_DOWNSIZE_CHECK_ADDER >= usable;
}

/* What a small block of `usable` bytes that does not stay asks for when it moves: a shrink the new size,
 * a growth at least a quarter more than the old size. */
FM5_INLINE size_t fm5_small_realloc_request(size_t new_size, size_t usable)
{
    if (new_size <= usable)
        return new_size;
    size_t preferred = usable + (usable >> FM5_SMALL_UPSIZE_SHIFT);
    return preferred > new_size ? preferred : new_size;
}

#endif
