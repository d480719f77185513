/* Checking that a freed debug block still holds exactly what fm5_debug_fill_freed wrote, which proves
 * nobody wrote through a dangling pointer while it was free. */
#ifndef FM5_DEBUG_FREED_CHECK_H
#define FM5_DEBUG_FREED_CHECK_H

#include "base/platform.h"

/* FastMM5 logs at most this many corrupted ranges per block. */
#define FM5_DEBUG_MAXIMUM_DESCRIBED_RANGES 32u

/* 1 when the `size` bytes at `user` (any alignment) are the freed pattern, marker slot included; 0
 * otherwise. Reads only [user, user + size), writes nothing, allocates nothing, formats nothing: it runs
 * every time a freed debug block is reused, so its caller calls the describer below only on 0. */
int fm5_debug_freed_pattern_intact(const void *user, size_t size);
/* Its C twin (api/asm_twins.h lists every twin). */
int fm5_c_debug_freed_pattern_intact(const void *user, size_t size);

/* Seed 001: the NASM checker hands user areas of this many bytes and more to its SSE2 loop (a tail jump,
 * so that smaller blocks run exactly the scalar code); the C twin has no such split. */
#define FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE 128u

/* For a block the check refused: writes the corrupted byte ranges as "offset(length)" separated by
 * single spaces (decimal offsets from `user`, ascending; adjacent wrong bytes form one range, also across
 * the marker slot's end) into `out`, NUL-terminated and truncated to `capacity` (which may be 0), and
 * returns how many ranges it found, at most FM5_DEBUG_MAXIMUM_DESCRIBED_RANGES: it stops looking once
 * that many are complete. Cold: only for the report. */
unsigned fm5_debug_describe_freed_corruption(const void *user, size_t size, char *out, size_t capacity);

#endif
