/* A minimal allocation benchmark for paired A/B runs: one workload per process, prints its time.
 *   alloc_free_loop pair <size> <iterations>   allocate and free one block repeatedly
 *   alloc_free_loop ring <iterations>          free and reallocate random slots of a 1024-block ring
 *   alloc_free_loop batch <size> <count> <iterations>   allocate <count> blocks, then free them all
 *                                              (glibc_simple's shape, the thread caches' worst case)
 * Output: "<workload> <iterations> <milliseconds>".
 * A Windows program (scripts/measure-*.sh, under Wine) and, in the host-profile build, a Linux one for
 * perf (docs/host-build.md); there FM5_LOOP_ALLOCATOR=libc runs the same loops on the C library's
 * malloc, which LD_PRELOAD can replace by another allocator such as mimalloc. */
#ifdef _WIN32
#  include <windows.h>
#else
#  define _POSIX_C_SOURCE 200809L
#  include <time.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fm5.h"

static double now_ms(void)
{
#ifdef _WIN32
    LARGE_INTEGER counter, frequency;
    QueryPerformanceCounter(&counter);
    QueryPerformanceFrequency(&frequency);
    return 1000.0 * (double)counter.QuadPart / (double)frequency.QuadPart;
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return 1000.0 * (double)now.tv_sec + (double)now.tv_nsec / 1e6;
#endif
}

/* fm5 unless FM5_LOOP_ALLOCATOR=libc (set at start: an imported function's address is no constant). */
static void *(*loop_malloc)(size_t);
static void (*loop_free)(void *);

static void choose_allocator(void)
{
    loop_malloc = fm5_malloc;
    loop_free = fm5_free;
    const char *name = getenv("FM5_LOOP_ALLOCATOR");
    if (name && strcmp(name, "libc") == 0) {
        loop_malloc = malloc;
        loop_free = free;
    }
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
    choose_allocator();
    if (argc >= 4 && strcmp(argv[1], "pair") == 0) {
        size_t size = (size_t)strtoull(argv[2], NULL, 10);
        long iterations = strtol(argv[3], NULL, 10);
        double start = now_ms();
        for (long i = 0; i < iterations; i++) {
            void *p = loop_malloc(size);
            *(volatile char *)p = 1;
            loop_free(p);
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
            ring[i] = loop_malloc(ring_size(next_random(&state)));
        double start = now_ms();
        for (long i = 0; i < iterations; i++) {
            unsigned long long r = next_random(&state);
            unsigned slot = (unsigned)(r % RING);
            loop_free(ring[slot]);
            ring[slot] = loop_malloc(ring_size(r >> 12));
            *(volatile char *)ring[slot] = 1;
        }
        double elapsed = now_ms() - start;
        for (int i = 0; i < RING; i++)
            loop_free(ring[i]);
        printf("ring %ld %.3f\n", iterations, elapsed);
        return 0;
    }
    if (argc >= 5 && strcmp(argv[1], "batch") == 0) {
        size_t size = (size_t)strtoull(argv[2], NULL, 10);
        long count = strtol(argv[3], NULL, 10);
        long iterations = strtol(argv[4], NULL, 10);
        void **blocks = malloc((size_t)(count > 0 ? count : 1) * sizeof *blocks);
        if (!blocks)
            return 1;
        double start = now_ms();
        for (long i = 0; i < iterations; i++) {
            for (long k = 0; k < count; k++) {
                blocks[k] = loop_malloc(size);
                *(volatile char *)blocks[k] = 1;
            }
            for (long k = 0; k < count; k++)
                loop_free(blocks[k]);
        }
        printf("batch%zu_%ld %ld %.3f\n", size, count, iterations, now_ms() - start);
        free(blocks);
        return 0;
    }
    fprintf(stderr, "usage: alloc_free_loop pair <size> <iterations> | ring <iterations> | "
                    "batch <size> <count> <iterations>\n");
    return 2;
}
