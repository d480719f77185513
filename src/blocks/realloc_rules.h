/* FastMM5's reallocation thresholds, shared by the C ReallocMem and the NASM small-block fast path. */
#ifndef FM5_REALLOC_RULES_H
#define FM5_REALLOC_RULES_H

#include "base/platform.h"

/* Growing a small block asks for twice its size plus this, so that a string grown a character at a time
 * moves rarely. */
#define FM5_SMALL_UPSIZE_ADDER 32u
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
 * a growth at least twice the old size plus the adder. */
FM5_INLINE size_t fm5_small_realloc_request(size_t new_size, size_t usable)
{
    if (new_size <= usable)
        return new_size;
    size_t preferred = 2 * usable + FM5_SMALL_UPSIZE_ADDER;
    return preferred > new_size ? preferred : new_size;
}

#endif
