/* A minimal allocation benchmark for paired A/B runs: one workload per process, prints its time.
 *   alloc_free_loop pair <size> <iterations>   allocate and free one block repeatedly
 *   alloc_free_loop ring <iterations>          free and reallocate random slots of a 1024-block ring
 * Output: "<workload> <iterations> <milliseconds>". */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fm5.h"

static double now_ms(void)
{
    LARGE_INTEGER counter, frequency;
    QueryPerformanceCounter(&counter);
    QueryPerformanceFrequency(&frequency);
    return 1000.0 * (double)counter.QuadPart / (double)frequency.QuadPart;
}

static unsigned long long next_random(unsigned long long *state)
{
    unsigned long long x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* Mostly small blocks, some medium ones, as typical programs allocate. */
static size_t ring_size(unsigned long long r)
{
    unsigned kind = (unsigned)(r % 100);
    r >>= 8;
    if (kind < 80)
        return 1 + r % 256;
    if (kind < 95)
        return 1 + r % 2622;
    return 2623 + r % 62000;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "pair") == 0) {
        size_t size = (size_t)strtoull(argv[2], NULL, 10);
        long iterations = strtol(argv[3], NULL, 10);
        double start = now_ms();
        for (long i = 0; i < iterations; i++) {
            void *p = fm5_malloc(size);
            *(volatile char *)p = 1;
            fm5_free(p);
        }
        printf("pair%zu %ld %.3f\n", size, iterations, now_ms() - start);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "ring") == 0) {
        enum { RING = 1024 };
        static void *ring[RING];
        long iterations = strtol(argv[2], NULL, 10);
        unsigned long long state = 0x2545F4914F6CDD1Dull;
        for (int i = 0; i < RING; i++)
            ring[i] = fm5_malloc(ring_size(next_random(&state)));
        double start = now_ms();
        for (long i = 0; i < iterations; i++) {
            unsigned long long r = next_random(&state);
            unsigned slot = (unsigned)(r % RING);
            fm5_free(ring[slot]);
            ring[slot] = fm5_malloc(ring_size(r >> 12));
            *(volatile char *)ring[slot] = 1;
        }
        double elapsed = now_ms() - start;
        for (int i = 0; i < RING; i++)
            fm5_free(ring[i]);
        printf("ring %ld %.3f\n", iterations, elapsed);
        return 0;
    }
    fprintf(stderr, "usage: alloc_free_loop pair <size> <iterations> | ring <iterations>\n");
    return 2;
}
