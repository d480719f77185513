/* Large buffers allocated and freed in a loop, the case the large-block cache serves (issue 11):
 * every buffer is written once per 4 KiB page, as a program that fills it would, so fresh OS pages
 * pay their first-touch faults and recycled ones do not.
 *   large_loop_1m      one 1 MiB buffer, allocated, touched and freed 20,000 times
 *   large_loop_varied  4 live slots of 1-10 MiB (xorshift64*, seed 7): each step frees one slot and
 *                      refills it with a buffer of a new size, 4,000 steps */
#include "bench.h"

static void touch_pages(char *p, size_t size)
{
    for (size_t k = 0; k < size; k += 4096)
        p[k] = 1;
    p[size - 1] = 1;
}

uint64_t wl_large_loop(const workload *w, double scale)
{
    const size_t mib = 1024 * 1024;
    uint64_t ops = 0;
    if (w->param == 0) {
        long count = bench_scaled(20000, scale);
        for (long i = 0; i < count; i++) {
            char *p = b_malloc(&ops, mib);
            touch_pages(p, mib);
            b_free(&ops, p);
        }
        return ops;
    }
    enum { LIVE = 4 };
    char *slots[LIVE] = {0};
    uint64_t rng = 7;
    long count = bench_scaled(4000, scale);
    for (long i = 0; i < count; i++) {
        size_t size = mib + (size_t)(bench_rand(&rng) % (9 * mib + 1));
        b_free(&ops, slots[i % LIVE]);
        char *p = slots[i % LIVE] = b_malloc(&ops, size);
        touch_pages(p, size);
    }
    for (int i = 0; i < LIVE; i++)
        b_free(&ops, slots[i]);
    return ops;
}
