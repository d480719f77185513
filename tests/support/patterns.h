/*
 * patterns.h — content patterns that tell every block's bytes apart.
 *
 * Byte i of a block filled with key k is byte (i % 8) of the little-endian word k + (i / 8) * C, C odd.
 * A byte written by anyone else, or a block that overlaps another live block, or a copy that moved
 * the wrong bytes shows up as a mismatch, and the word form keeps fill and verify at memory speed:
 * tests fill and verify gigabytes.
 */
#ifndef FM5_TEST_PATTERNS_H
#define FM5_TEST_PATTERNS_H

#include "arch.h"

#define TU_PATTERN_STEP 0x9E3779B97F4A7C15ull

/* The key of one block: a function of the test's seed, the block's slot and how often the slot was
 * refilled. */
uint64_t tu_pattern_key(uint64_t seed, uint64_t slot, uint64_t generation);

/* The byte at `offset` of a block filled with `key`. */
uint8_t tu_pattern_byte(uint64_t key, size_t offset);

/* Fills bytes [from, to) of the block with the pattern of `key`, by absolute offset. */
void tu_pattern_fill_range(void *block, size_t from, size_t to, uint64_t key);
void tu_pattern_fill(void *block, size_t size, uint64_t key);

/* Returns the offset of the first byte in [from, to) that does not hold the pattern, or SIZE_MAX. */
size_t tu_pattern_find_mismatch(const void *block, size_t from, size_t to, uint64_t key);

/* A check that names the first bad byte, its value and the expected one. */
#define CHECK_PATTERN_RANGE(block, from, to, key)                                                        \
    tu_check_pattern((const void *)(block), (size_t)(from), (size_t)(to), (uint64_t)(key), #block, \
                     __FILE__, __LINE__)
#define CHECK_PATTERN(block, size, key) CHECK_PATTERN_RANGE(block, 0, size, key)

int tu_check_pattern(const void *block, size_t from, size_t to, uint64_t key, const char *expr, const char *file,
                     int line);

/* Whether all `size` bytes of the block are `value`; if not, the first other one's offset goes to
 * *first_bad (when first_bad is not NULL). */
int tu_all_bytes_equal(const void *block, size_t size, uint8_t value, size_t *first_bad);

#endif /* FM5_TEST_PATTERNS_H */
