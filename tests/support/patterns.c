/*
 * patterns.c — filling and verifying the patterns of patterns.h.
 */
#include "patterns.h"

#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "rng.h"

uint64_t tu_pattern_key(uint64_t seed, uint64_t slot, uint64_t generation)
{
    return tu_splitmix64(seed ^ tu_splitmix64(slot * 0x100000001B3ull + generation));
}

uint8_t tu_pattern_byte(uint64_t key, size_t offset)
{
    uint64_t w = key + (uint64_t)(offset / 8) * TU_PATTERN_STEP;
    return (uint8_t)(w >> (8 * (offset % 8)));
}

void tu_pattern_fill_range(void *block, size_t from, size_t to, uint64_t key)
{
    uint8_t *p = (uint8_t *)block;
    size_t i = from;
    while (i < to && (i % 8) != 0) {
        p[i] = tu_pattern_byte(key, i);
        i++;
    }
    uint64_t w = key + (uint64_t)(i / 8) * TU_PATTERN_STEP;
    for (; i + 8 <= to; i += 8) {
        memcpy(p + i, &w, 8); /* the block itself may be only 2-aligned relative to i */
        w += TU_PATTERN_STEP;
    }
    for (; i < to; i++)
        p[i] = tu_pattern_byte(key, i);
}

void tu_pattern_fill(void *block, size_t size, uint64_t key)
{
    tu_pattern_fill_range(block, 0, size, key);
}

size_t tu_pattern_find_mismatch(const void *block, size_t from, size_t to, uint64_t key)
{
    const uint8_t *p = (const uint8_t *)block;
    size_t i = from;
    while (i < to && (i % 8) != 0) {
        if (p[i] != tu_pattern_byte(key, i))
            return i;
        i++;
    }
    uint64_t w = key + (uint64_t)(i / 8) * TU_PATTERN_STEP;
    for (; i + 8 <= to; i += 8) {
        uint64_t got;
        memcpy(&got, p + i, 8);
        if (got != w) {
            for (size_t j = i; j < i + 8; j++)
                if (p[j] != tu_pattern_byte(key, j))
                    return j;
        }
        w += TU_PATTERN_STEP;
    }
    for (; i < to; i++)
        if (p[i] != tu_pattern_byte(key, i))
            return i;
    return SIZE_MAX;
}

int tu_check_pattern(const void *block, size_t from, size_t to, uint64_t key, const char *expr, const char *file,
                     int line)
{
    size_t bad = tu_pattern_find_mismatch(block, from, to, key);
    if (bad == SIZE_MAX) {
        tu_atomic_increment(&tu_passed);
        return 1;
    }
    tu_atomic_increment(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: pattern of %s=%p in [%zu, %zu): byte %zu is 0x%02x, expected 0x%02x\n", file, line,
               expr, block, from, to, bad, ((const uint8_t *)block)[bad], tu_pattern_byte(key, bad));
    return 0;
}

int tu_all_bytes_equal(const void *block, size_t size, uint8_t value, size_t *first_bad)
{
    const uint8_t *p = (const uint8_t *)block;
    for (size_t i = 0; i < size; i++) {
        if (p[i] != value) {
            if (first_bad)
                *first_bad = i;
            return 0;
        }
    }
    return 1;
}
