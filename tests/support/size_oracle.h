/*
 * size_oracle.h — the sizes fm5 must give, from FastMM5's tables: the small block classes, the medium
 * bins, the large block granularity and the limits between the three kinds.
 *
 * Written from the specification, never from src/ (nothing here includes a src/ header), so that a
 * table that changes there shows up as a failure here.
 */
#ifndef FM5_TEST_SIZE_ORACLE_H
#define FM5_TEST_SIZE_ORACLE_H

#include "arch.h"

/* The alignment of every block when no minimum alignment is set. */
#if TU_64BIT
#define TU_DEFAULT_ALIGNMENT 16u
#else
#define TU_DEFAULT_ALIGNMENT 8u
#endif

#define TU_MAX_SMALL_USER 2622u
#define TU_MIN_MEDIUM_USER 2623u
#define TU_MAX_MEDIUM_USER 558904u
#define TU_MIN_LARGE_USER 558905u
#define TU_SMALL_HEADER 2u
#define TU_MEDIUM_HEADER 8u
#define TU_LARGE_HEADER 64u
#define TU_MEDIUM_BIN_COUNT 1024u

/* The small block sizes (header included), ascending except that on Win32 the ten Win32-only sizes
 * (8, 24, ..., 152) come first; the functions below do not rely on the order. The count is
 * taken from the list itself, so that a test can check it against the number FastMM5 documents. */
extern const unsigned short tu_small_classes[];
extern const size_t tu_small_class_count;
#define TU_SMALL_CLASS_COUNT tu_small_class_count

/* Block size (header included) of the small block that serves `n` bytes when blocks must be
 * `alignment`-aligned: the smallest class that holds n + 2 and is a multiple of the alignment. */
size_t tu_small_block_size(size_t n, unsigned alignment);

/* The alignment FastMM5's layout gives a small block of this size: the largest power of two up to
 * 64 that divides it, and never less than the minimum alignment in force. */
size_t tu_small_natural_alignment(size_t block_size, unsigned minimum_alignment);

/* The i-th medium bin size, i in [0, TU_MEDIUM_BIN_COUNT). */
size_t tu_medium_bin(size_t i);

/* Block size (8-byte header included) of the medium block that serves `n` bytes. */
size_t tu_medium_block_size(size_t n);

/* The usable size of a large block of `n` bytes: whole 64 KB units, less the header. */
size_t tu_large_usable(size_t n);

/* What FastMM_BlockMaximumUserBytes must say for a fresh block of `n` bytes. */
size_t tu_expected_usable(size_t n, unsigned alignment);

/* The FastMM_BlockKind (FastMM_SmallBlock, FastMM_MediumBlock or FastMM_LargeBlock) of `n` bytes. */
unsigned tu_expected_kind(size_t n);

/* "small", "medium", "large", "small-span", "medium-span" or "?". */
const char *tu_kind_name(unsigned kind);

#endif /* FM5_TEST_SIZE_ORACLE_H */
