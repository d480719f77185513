/*
 * rng.c — the generator of rng.h.
 */
#include "rng.h"

#include <math.h>

uint64_t tu_splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

void tu_rng_seed(tu_rng *r, uint64_t seed)
{
    r->state = tu_splitmix64(seed);
    if (r->state == 0) /* xorshift never leaves zero */
        r->state = 0x2545F4914F6CDD1Dull;
}

uint64_t tu_rng_next(tu_rng *r)
{
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

uint64_t tu_rng_below(tu_rng *r, uint64_t n)
{
    return (tu_rng_next(r) >> 11) % n;
}

size_t tu_rng_range(tu_rng *r, size_t lo, size_t hi)
{
    return lo + (size_t)tu_rng_below(r, (uint64_t)(hi - lo) + 1);
}

size_t tu_rng_log_range(tu_rng *r, size_t lo, size_t hi)
{
    double u = (double)(tu_rng_next(r) >> 11) / 9007199254740992.0; /* [0, 1) */
    double v = (double)lo * exp(u * log((double)hi / (double)lo));
    size_t s = (size_t)v;
    if (s < lo)
        s = lo;
    if (s > hi)
        s = hi;
    return s;
}
