/* Every size that ties the block managers together, and the static assertions that keep the ties.
 * A constant that another one depends on is defined here, next to the assertion that says how. */
#ifndef FM5_GEOMETRY_H
#define FM5_GEOMETRY_H

#include "base/platform.h"
#include "base/os.h"

/* ---- arenas ------------------------------------------------------------------------------------ */

/* FastMM5's compile-time counts are fm5's defaults; FastMM_SetArenaCounts and FM5_SMALL_ARENAS,
 * FM5_MEDIUM_ARENAS, FM5_LARGE_ARENAS change them before the first allocation (fm5.h). The managers
 * are static arrays of the maximum: the bytes an arena never used stay untouched zero pages. 32 is
 * eight times FastMM5's small and medium counts; a medium arena keeps an empty 1.5-4 MB span, so more
 * arenas cost memory, and every scan that finds all arenas busy visits each of them. */
#define FM5_DEFAULT_SMALL_ARENA_COUNT 4
#define FM5_DEFAULT_MEDIUM_ARENA_COUNT 4
#define FM5_DEFAULT_LARGE_ARENA_COUNT 8
#define FM5_MAXIMUM_ARENA_COUNT 32

/* ---- small blocks ------------------------------------------------------------------------------ */

/* A small block is preceded by its 16-bit status word only. */
#define FM5_SMALL_HEADER_SIZE 2u
/* FastMM5's largest small size class (header included): above it a block is medium. */
#define FM5_MAXIMUM_SMALL_BLOCK_SIZE 2624u
#define FM5_MAXIMUM_SMALL_USER_SIZE (FM5_MAXIMUM_SMALL_BLOCK_SIZE - FM5_SMALL_HEADER_SIZE)

/* Size classes step by the minimum alignment; Win32 has more of them because its step is 8 bytes. */
#ifdef FM5_32BIT
#  define FM5_SMALL_GRANULARITY_SHIFT 3
#  define FM5_SMALL_CLASS_COUNT 61
#  define FM5_DEFAULT_MINIMUM_ALIGNMENT 8u
#else
#  define FM5_SMALL_GRANULARITY_SHIFT 4
#  define FM5_SMALL_CLASS_COUNT 51
#  define FM5_DEFAULT_MINIMUM_ALIGNMENT 16u
#endif
#define FM5_SMALL_GRANULARITY (1u << FM5_SMALL_GRANULARITY_SHIFT)

/* A small block's status word keeps (offset of its 64-byte line from the span) / 64 in bits 3..15:
 * 13 bits of 64-byte lines, so no small block may sit 512 KB or more past its span's start. */
#define FM5_SMALL_OFFSET_SHIFT 3
#define FM5_SMALL_LINE_SHIFT 6
#define FM5_SMALL_MAXIMUM_SPAN_REACH ((size_t)1 << (16 - FM5_SMALL_OFFSET_SHIFT + FM5_SMALL_LINE_SHIFT))

/* A span aims at 64 blocks, but at least 16, and its size stays within these bounds (FastMM5's). A
 * class's first span has the minimum and each next one twice the blocks of the one it used up, up to
 * the optimal size (small_blocks.c, next_span_size). */
#define FM5_SMALL_MINIMUM_BLOCKS_PER_SPAN 16u
#define FM5_SMALL_OPTIMAL_BLOCKS_PER_SPAN 64u
#define FM5_SMALL_MINIMUM_OPTIMAL_SPAN_SIZE 19264u
#define FM5_SMALL_MAXIMUM_OPTIMAL_SPAN_SIZE 101184u
/* The first 64 bytes of a span are its header; the header's last two bytes are the first block's
 * status word. */
#define FM5_SMALL_SPAN_HEADER_SIZE 64u

/* ---- medium blocks ----------------------------------------------------------------------------- */

#define FM5_MEDIUM_HEADER_SIZE 8u
/* Medium blocks, their sizes and their span offsets are whole 64-byte lines. */
#define FM5_MEDIUM_ALIGNMENT 64u
/* The bins: 384 of 256-byte steps from 2,880 bytes, 384 of 512-byte steps from 101,184 and 256 of
 * 1,024-byte steps from 297,792 (FastMM5's). Block sizes include the 8-byte header. */
#define FM5_MEDIUM_BIN_COUNT 1024
#define FM5_MEDIUM_BIN_GROUP_COUNT 32
#define FM5_MEDIUM_BIN_GROUP_1_START 2880u
#define FM5_MEDIUM_BIN_GROUP_2_START 101184u
#define FM5_MEDIUM_BIN_GROUP_3_START 297792u
#define FM5_MEDIUM_BIN_GROUP_2_FIRST_BIN 384u
#define FM5_MEDIUM_BIN_GROUP_3_FIRST_BIN 768u
#define FM5_MINIMUM_MEDIUM_BLOCK_SIZE FM5_MEDIUM_BIN_GROUP_1_START
/* The size of the last bin: above it a block is large. */
#define FM5_MAXIMUM_MEDIUM_BLOCK_SIZE 558912u
#define FM5_MAXIMUM_MEDIUM_USER_SIZE (FM5_MAXIMUM_MEDIUM_BLOCK_SIZE - FM5_MEDIUM_HEADER_SIZE)
/* The largest medium span (FastMM_OptimizeForSpeed). The header's 16-bit counts of 64-byte lines
 * (block size and offset from the span) reach 4 MB, which caps spans at that size. */
#define FM5_MAXIMUM_MEDIUM_SPAN_SIZE ((size_t)4 << 20)
#define FM5_MEDIUM_HEADER_REACH ((size_t)65536 * FM5_MEDIUM_ALIGNMENT)

/* ---- large blocks ------------------------------------------------------------------------------ */

/* One cache line of header before the user area, so that large blocks keep 64-byte alignment. */
#define FM5_LARGE_HEADER_SIZE 64u

/* ---- the ties ---------------------------------------------------------------------------------- */

_Static_assert(FM5_SMALL_GRANULARITY == FM5_DEFAULT_MINIMUM_ALIGNMENT,
               "size classes step by the minimum alignment");
_Static_assert(FM5_MAXIMUM_SMALL_BLOCK_SIZE % FM5_SMALL_GRANULARITY == 0, "the largest class is a whole step");
_Static_assert(FM5_MINIMUM_MEDIUM_BLOCK_SIZE >= FM5_MAXIMUM_SMALL_USER_SIZE + 1 + FM5_MEDIUM_HEADER_SIZE,
               "the first bin serves the first size above the small range");
_Static_assert(FM5_MEDIUM_BIN_GROUP_1_START + FM5_MEDIUM_BIN_GROUP_2_FIRST_BIN * 256u == FM5_MEDIUM_BIN_GROUP_2_START,
               "the 256-byte bins end where the 512-byte bins start");
_Static_assert(FM5_MEDIUM_BIN_GROUP_2_START +
                   (FM5_MEDIUM_BIN_GROUP_3_FIRST_BIN - FM5_MEDIUM_BIN_GROUP_2_FIRST_BIN) * 512u ==
                   FM5_MEDIUM_BIN_GROUP_3_START,
               "the 512-byte bins end where the 1,024-byte bins start");
_Static_assert(FM5_MEDIUM_BIN_GROUP_3_START + (FM5_MEDIUM_BIN_COUNT - 1 - FM5_MEDIUM_BIN_GROUP_3_FIRST_BIN) * 1024u ==
                   FM5_MAXIMUM_MEDIUM_BLOCK_SIZE,
               "the largest medium block is the size of the last bin");
_Static_assert(FM5_MEDIUM_BIN_COUNT == 32 * FM5_MEDIUM_BIN_GROUP_COUNT, "one bitmap bit per bin, 32 per group");
_Static_assert(FM5_MAXIMUM_MEDIUM_BLOCK_SIZE % FM5_MEDIUM_ALIGNMENT == 0 &&
                   FM5_MEDIUM_BIN_GROUP_1_START % FM5_MEDIUM_ALIGNMENT == 0,
               "medium sizes are whole lines");
_Static_assert(FM5_MAXIMUM_MEDIUM_SPAN_SIZE <= FM5_MEDIUM_HEADER_REACH,
               "a 16-bit count of 64-byte lines reaches every block of the largest span");
_Static_assert(FM5_MAXIMUM_MEDIUM_SPAN_SIZE % FM5_OS_GRANULARITY == 0, "spans are whole OS granules");
_Static_assert(FM5_MAXIMUM_MEDIUM_BLOCK_SIZE < FM5_MAXIMUM_MEDIUM_SPAN_SIZE / 2,
               "a span holds more than one of the largest medium blocks");
/* A small span is a medium block: its largest (the optimal size rounded up to a bin, plus the span
 * header) must stay within the status word's reach. */
_Static_assert(FM5_SMALL_MAXIMUM_OPTIMAL_SPAN_SIZE + FM5_SMALL_SPAN_HEADER_SIZE + 1024u < FM5_SMALL_MAXIMUM_SPAN_REACH,
               "every small block of a span is within its status word's reach");
_Static_assert(FM5_SMALL_MINIMUM_BLOCKS_PER_SPAN * FM5_MAXIMUM_SMALL_BLOCK_SIZE < FM5_SMALL_MAXIMUM_SPAN_REACH,
               "a span of the minimum block count of the largest class is within reach");
_Static_assert(FM5_SMALL_MAXIMUM_OPTIMAL_SPAN_SIZE <= FM5_MAXIMUM_MEDIUM_USER_SIZE, "a small span is a medium block");
_Static_assert(FM5_LARGE_HEADER_SIZE % FM5_MEDIUM_ALIGNMENT == 0, "large blocks keep 64-byte alignment");

#endif
