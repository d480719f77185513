/*
 * rng.h — deterministic pseudo-random numbers: splitmix64 to spread the seed, xorshift64* to generate.
 * A test that prints its seed can be rerun to the same failure.
 */
#ifndef FM5_TEST_RNG_H
#define FM5_TEST_RNG_H

#include "arch.h"

typedef struct tu_rng {
    uint64_t state;
} tu_rng;

/* One splitmix64 step: spreads any 64-bit value (a seed, a slot number) over all 64 bits. */
uint64_t tu_splitmix64(uint64_t x);

void tu_rng_seed(tu_rng *r, uint64_t seed);
uint64_t tu_rng_next(tu_rng *r);

/* Uniform in [0, n); n > 0. The modulo bias (below 2^-40 for the ranges used here) is irrelevant. */
uint64_t tu_rng_below(tu_rng *r, uint64_t n);

/* Uniform in [lo, hi]. */
size_t tu_rng_range(tu_rng *r, size_t lo, size_t hi);

/* Log-uniform in [lo, hi], lo >= 1: most sizes are near lo, as in real programs, while every
 * magnitude up to hi still comes up. */
size_t tu_rng_log_range(tu_rng *r, size_t lo, size_t hi);

#endif /* FM5_TEST_RNG_H */
