/* Workloads ported from the FastCode Memory Manager Benchmark (MemoryManagerBV201, Maxim Masiutin's
 * FastCodeBenchmark): the facts and parameters are FastCode's, the code is ours.
 *
 * Sizes follow FastCode's `CurValue mod M` / `Inc(CurValue, Prime)` sequences (CurValue starts at
 * Prime), so every port is bit-exact with respect to the sizes asked for; Delphi strings and dynamic
 * arrays carry their headers (bench.h: delphi_string_bytes).
 *
 * SCALE FACTORS. FastCode's counts are sized for native Delphi runs of several seconds each; one run
 * here should take about 0.1-2 s under Wine on a 2-core 2.6 GHz machine. Each workload therefore
 * multiplies one count (named next to it, "F_...") by a constant factor, and then by --scale. The
 * factor applies to rounds (the outer loop) unless said otherwise, so that the live set, and with it
 * the size-class and fragmentation behaviour, stays FastCode's. */
#include "bench.h"

#include <string.h>

#define IS64 (sizeof(void *) == 8)

/* Writes the first and the last byte, as FastCode's "touch". */
static inline void touch_ends(void *p, size_t size)
{
    char *c = p;
    c[0] = 1;
    c[size - 1] = 2;
}

/* ---- ReallocMem Small / Medium / Large (ReallocMemBenchmark.pas) ------------------------------ */
/* Prime 10513. Small: 521 pointers, delta 257, 50,000,000 iterations. Medium: 20011, 2039, 25,000,000.
 * Large: 257 (Win32) / 2153 (Win64) pointers, delta 555029, 265,000 iterations. */
static const struct {
    long pointers32, pointers64, delta;
    double iterations, factor;
} realloc_mem_params[3] = {
    {521, 521, 257, 50e6, 0.1},          /* F_realloc_small: 1/10 -> 5,000,000 */
    {20011, 20011, 2039, 25e6, 0.1},     /* F_realloc_medium: 1/10 -> 2,500,000 */
    {257, 2153, 555029, 265e3, 0.1},     /* F_realloc_large: 1/10 -> 26,500 */
};

uint64_t wl_realloc_mem(const workload *w, double scale)
{
    const long prime = 10513;
    long np = IS64 ? realloc_mem_params[w->param].pointers64 : realloc_mem_params[w->param].pointers32;
    long delta = realloc_mem_params[w->param].delta;
    long iterations = bench_scaled(realloc_mem_params[w->param].iterations,
                                   realloc_mem_params[w->param].factor * scale);
    char **pointers = bench_pages((size_t)np * sizeof *pointers);
    int64_t *sizes = bench_pages((size_t)np * sizeof *sizes);
    uint64_t ops = 0;
    int64_t cur = prime;
    for (long i = 1; i <= iterations; i++) {
        long idx = (long)(cur % np);
        cur += prime;
        int64_t s = sizes[idx] + cur % delta - delta / 2 - ((i & 7) % delta);
        sizes[idx] = s < 0 ? -s : s;
        cur += prime;
        size_t sz = (size_t)sizes[idx];
        pointers[idx] = b_realloc(&ops, pointers[idx], sz);
        if (sz > 0) {
            pointers[idx][0] = 1;
            if (sz > 1)
                pointers[idx][sz - 1] = 2;
        }
    }
    for (long i = 0; i < np; i++)
        b_free(&ops, pointers[i]);
    bench_free_pages(pointers);
    bench_free_pages(sizes);
    return ops;
}

/* ---- Small upsize (SmallUpsizeBenchmark.pas) --------------------------------------------------- */
/* 500,000 pointers x 50 rounds, prime 43: size 1 + cur%32 from nil, then three times size += cur%32
 * with a realloc each; all freed at the end of each round. F_small_upsize: rounds x 1/10 -> 5. */
uint64_t wl_small_upsize(const workload *w, double scale)
{
    (void)w;
    const long prime = 43, count = 500000;
    long rounds = bench_scaled(50, 0.1 * scale);
    char **p = bench_pages((size_t)count * sizeof *p);
    uint64_t ops = 0;
    int64_t cur = prime;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < count; i++) {
            size_t size = 1 + (size_t)(cur % 32);
            cur += prime;
            p[i] = b_realloc(&ops, NULL, size);
            touch_ends(p[i], size);
            for (int j = 0; j < 3; j++) {
                size += (size_t)(cur % 32);
                cur += prime;
                p[i] = b_realloc(&ops, p[i], size);
                touch_ends(p[i], size);
            }
        }
        for (long i = 0; i < count; i++) {
            b_free(&ops, p[i]);
            p[i] = NULL;
        }
    }
    bench_free_pages(p);
    return ops;
}

/* ---- Tiny / VerySmall downsize (SmallDownsizeBenchmark.pas) ------------------------------------ */
/* 5,000,000 (Win32) / 10,000,000 (Win64) pointers, prime 41; M = 64 with 4 rounds (tiny; the stored
 * FastCode source has 7, the reference note 4: we keep 4) or M = 200 with 5 rounds (very small).
 * size = M + cur%(3M), GetMem, then 5 x size = max(1, size - cur%M) with ReallocMem; free all per
 * round. F_tiny_downsize and F_verysmall_downsize: the POINTER COUNT x 1/10 (one round at full size
 * already takes seconds; rounds stay FastCode's). */
uint64_t wl_small_downsize(const workload *w, double scale)
{
    const long prime = 41;
    long m = w->param;
    long rounds = m == 64 ? 4 : 5;
    long count = bench_scaled(IS64 ? 10e6 : 5e6, 0.1 * scale);
    char **p = bench_pages((size_t)count * sizeof *p);
    uint64_t ops = 0;
    int64_t cur = prime;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < count; i++) {
            long size = m + (long)(cur % (3 * m));
            cur += prime;
            p[i] = b_malloc(&ops, (size_t)size);
            p[i][0] = 13;
            if (size > 5)
                p[i][size - 1] = 13;
            for (int j = 0; j < 5; j++) {
                size -= (long)(cur % m);
                if (size < 1)
                    size = 1;
                cur += prime;
                p[i] = b_realloc(&ops, p[i], (size_t)size);
                p[i][0] = 13;
                if (size > 5)
                    p[i][size - 1] = 13;
            }
        }
        for (long i = 0; i < count; i++) {
            b_free(&ops, p[i]);
            p[i] = NULL;
        }
    }
    bench_free_pages(p);
    return ops;
}

/* ---- Address space creep (AddressSpaceCreepBenchmark.pas, ...Large.pas) ----------------------- */

/* Writes one byte in every 4 KB page and the last byte. */
static inline void touch_pages(void *p, size_t size)
{
    char *c = p;
    for (size_t k = 0; k < size; k += 4096)
        c[k] = 1;
    c[size - 1] = 2;
}

/* Fills `count` slots with blocks of 1 + (modulus + cur) % modulus bytes, then frees and reallocates
 * every slot in each round; cur advances by `prime` after each size. */
static uint64_t creep(long count, long rounds, int64_t prime, int64_t modulus, void (*touch)(void *, size_t))
{
    char **p = bench_pages((size_t)count * sizeof *p);
    uint64_t ops = 0;
    int64_t cur = prime;
    for (long r = -1; r < rounds; r++)
        for (long i = 0; i < count; i++) {
            b_free(&ops, p[i]);  /* the first pass (r = -1) fills empty slots: nothing is freed */
            size_t size = 1 + (size_t)((modulus + cur) % modulus);
            cur += prime;
            p[i] = b_malloc(&ops, size);
            touch(p[i], size);
        }
    for (long i = 0; i < count; i++)
        b_free(&ops, p[i]);
    bench_free_pages(p);
    return ops;
}

/* 500,000 (Win32) / 3,000,000 (Win64) pointers, prime 3, size 1 + (256 + cur) % 256; fill once, then
 * 108 rounds of free + alloc at each slot. F_address_space_creep: rounds x 1/20 -> 5. */
uint64_t wl_address_space_creep(const workload *w, double scale)
{
    (void)w;
    return creep(IS64 ? 3000000 : 500000, bench_scaled(108, 0.05 * scale), 3, 256, touch_ends);
}

/* 20,000 (Win32) / 100,000 (Win64) pointers, prime 43, size 1 + (70000 + cur) % 70000, 400 rounds,
 * touching every 4 KB (the Win64 live set is about 3.5 GB). F_address_space_creep_large: rounds x 1/200
 * -> 2 (one round takes about 0.5 s with fm5 under Wine). */
uint64_t wl_address_space_creep_large(const workload *w, double scale)
{
    (void)w;
    return creep(IS64 ? 100000 : 20000, bench_scaled(400, 0.005 * scale), 43, 70000, touch_pages);
}

/* ---- Large block spread (LargeBlockSpreadBenchmark.pas) ---------------------------------------- */
/* 2000 pointers x 48 rounds, prime 7, size (1 + cur%3) * 65537, every byte written; all freed each
 * round. F_large_block_spread: rounds x 1/8 -> 6. */
uint64_t wl_large_block_spread(const workload *w, double scale)
{
    (void)w;
    const long prime = 7, count = 2000;
    long rounds = bench_scaled(48, 0.125 * scale);
    char **p = bench_pages((size_t)count * sizeof *p);
    uint64_t ops = 0;
    int64_t cur = prime;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < count; i++) {
            size_t size = (1 + (size_t)(cur % 3)) * 65537;
            cur += prime;
            p[i] = b_malloc(&ops, size);
            memset(p[i], (int)(char)i, size);
        }
        for (long i = 0; i < count; i++)
            b_free(&ops, p[i]);
    }
    bench_free_pages(p);
    return ops;
}

/* ---- Allocate / reallocate, use (SingleThreaded*.pas, MultiThreadedAllocAndFree.pas) ------------ */

/* slot_limit and use_block are in bench.h (bench/medium_holes.c runs st_realloc_use's churn too).
 * A churn sums what use_block read and stores the sum once, at its end, into g_sink (so the reads
 * stay). Not a store per block: with every thread adding into one global line at every block, the
 * threads of mt_alloc_use_free_* passed that line between the cores at every block, for every
 * allocator alike. */
static volatile unsigned g_sink;

/* The loop shared by FastCode's allocate-or-reallocate-and-use tests: each round visits every slot,
 * gives it a new block of cur % slot_limit + 1 bytes and uses it; every slot is freed at the end. */
typedef struct slot_churn {
    long count;
    long rounds;
    int64_t prime;
    long limits[4];
    int reallocate;      /* ReallocMem instead of FreeMem + GetMem */
    int advance_first;   /* MultiThreadedAllocAndFree advances cur before computing the size */
} slot_churn;

static uint64_t churn_slots(const slot_churn *c, char **p)
{
    uint64_t ops = 0;
    unsigned sum = 0;
    int64_t cur = c->prime;
    for (long r = 0; r < c->rounds; r++)
        for (long i = 0; i < c->count; i++) {
            if (c->advance_first)
                cur += c->prime;
            long size = (long)(cur % slot_limit(i, c->limits[0], c->limits[1], c->limits[2], c->limits[3])) + 1;
            if (!c->advance_first)
                cur += c->prime;
            if (c->reallocate) {
                p[i] = b_realloc(&ops, p[i], (size_t)size);
            } else {
                b_free(&ops, p[i]);
                p[i] = b_malloc(&ops, (size_t)size);
            }
            sum += use_block(p[i], size);
        }
    for (long i = 0; i < c->count; i++)
        b_free(&ops, p[i]);
    __atomic_fetch_add(&g_sink, sum, __ATOMIC_RELAXED);
    return ops;
}

/* Every slot starts empty, so a churn's first round only allocates (its frees, or its reallocations,
 * are of NULL): a run must have a second round to free or resize a live block at all. FastCode's own
 * counts (5 and 14 rounds) are far above it; at make bench's scale 0.1 (1 round, rounded) they are not. */
static long churn_rounds(double rounds, double factor)
{
    long r = bench_scaled(rounds, factor);
    return r < 2 ? 2 : r;
}

static uint64_t churn_single_threaded(const slot_churn *c)
{
    char **p = bench_pages((size_t)c->count * sizeof *p);
    uint64_t ops = churn_slots(c, p);
    bench_free_pages(p);
    return ops;
}

/* 610,000 pointers, 100 rounds, prime 13; limits 64/1024/4096/262144; size = cur%max + 1 with cur
 * advanced after. F_st_alloc_use_free: rounds x 1/20 -> 5, at least 2 (churn_rounds). */
uint64_t wl_st_alloc_use_free(const workload *w, double scale)
{
    (void)w;
    slot_churn c = { 610000, churn_rounds(100, 0.05 * scale), 13, FASTCODE_CHURN_LIMITS, 0, 0 };
    return churn_single_threaded(&c);
}

/* Same distribution; 150,000 pointers, 140 rounds, prime 29, ReallocMem instead of free + alloc.
 * F_st_realloc_use: rounds x 1/10 -> 14, at least 2 (churn_rounds). */
uint64_t wl_st_realloc_use(const workload *w, double scale)
{
    (void)w;
    slot_churn c = { ST_REALLOC_USE_SLOTS, churn_rounds(140, 0.1 * scale), ST_REALLOC_USE_PRIME,
                     FASTCODE_CHURN_LIMITS, 1, 0 };
    return churn_single_threaded(&c);
}

/* 500 pointers, 610,000 rounds, prime 83; limits 67/131/257/521. FastCode calls UpdateUsageStatistics
 * (GlobalMemoryStatus) once per round; we skip it, since under Wine it would dominate the time.
 * F_st_tiny_realloc: rounds x 1/20 -> 30,500. */
uint64_t wl_st_tiny_realloc(const workload *w, double scale)
{
    (void)w;
    slot_churn c = { 500, bench_scaled(610000, 0.05 * scale), 83, { 67, 131, 257, 521 }, 1, 0 };
    return churn_single_threaded(&c);
}

/* Multi-threaded allocate, use and free: T threads, each with 2500 pointers and 90000 div T + 1
 * rounds; thread k uses prime VeryGoodPrimes[k]; cur is advanced BEFORE the size is computed. The
 * threads run at normal priority (FastCode: tpLower) and start together at a gate.
 * F_mt_alloc_use_free: rounds x 1/50 (T = 2: 900 rounds per thread). */
typedef struct mt_thread {
    long rounds;
    unsigned prime;
    uint64_t ops;
} mt_thread;

static DWORD WINAPI mt_alloc_use_free_thread(void *arg)
{
    enum { COUNT = 2500 };
    mt_thread *t = arg;
    char *p[COUNT] = {0};
    slot_churn c = { COUNT, t->rounds, t->prime, { 64, 1024, 4096, 262144 }, 0, 1 };
    bench_wait_gate();
    t->ops = churn_slots(&c, p);
    return 0;
}

uint64_t wl_mt_alloc_use_free(const workload *w, double scale)
{
    int n = (int)w->param;
    mt_thread *t = bench_pages((size_t)n * sizeof *t);
    for (int k = 0; k < n; k++) {
        t[k].rounds = bench_scaled(90000 / n + 1, 0.02 * scale);
        t[k].prime = bench_very_good_prime(k);
    }
    bench_run_threads(n, mt_alloc_use_free_thread, t, sizeof *t, 0);
    uint64_t ops = 0;
    for (int k = 0; k < n; k++)
        ops += t[k].ops;
    bench_free_pages(t);
    return ops;
}

/* ---- Raw Performance (RawPerformanceSingleThread.pas, RawPerformanceMultiThread.pas) ----------- */

/* One pass of i = 1..ops over a ring of string slots: the slot is emptied, then SetLength to the
 * char count of chars_of(i, n), and every 4096th char written. */
static uint64_t raw_perf_pass(char **ring, long ring_size, long iterations, int multi)
{
    uint64_t ops = 0;
    long n = 0;
    for (long i = 1; i <= iterations; i++) {
        size_t chars;
        if ((i & 255) < 240)
            chars = (size_t)((4 * i) & 1023) + 1;
        else if ((i & 255) != 255)
            chars = multi ? 16 * (size_t)n + 1 : 2 * (size_t)n + 1;
        else
            chars = multi ? 128 * (size_t)n + 1 : 16 * (size_t)n + 1;
        b_free(&ops, ring[n]);
        size_t bytes = delphi_string_bytes(chars);
        char *s = b_malloc(&ops, bytes);
        ring[n] = s;
        /* Delphi writes the header, the length and the terminator; then chars 1, 4097, ... */
        memset(s, 0, DELPHI_STRREC);
        s[bytes - 1] = s[bytes - 2] = 0;
        for (size_t k = 0; k < chars; k += 4096)
            s[DELPHI_STRREC + 2 * k] = 1;
        if (++n == ring_size)
            n = 0;
    }
    for (long k = 0; k < ring_size; k++) {
        b_free(&ops, ring[k]);
        ring[k] = NULL;
    }
    return ops;
}

/* 9 x 8,388,608 SetLength calls, ring of 16361; chars (4i)&1023 + 1 / 2n + 1 / 16n + 1.
 * F_raw_perf_1: the 8,388,608 x 1/20 -> 419,430 per pass (9 passes). */
uint64_t wl_raw_perf_1(const workload *w, double scale)
{
    (void)w;
    const long ring_size = 16361;
    long iterations = bench_scaled(8388608, 0.05 * scale);
    char **ring = bench_pages((size_t)ring_size * sizeof *ring);
    uint64_t ops = 0;
    for (int pass = 0; pass < 9; pass++)
        ops += raw_perf_pass(ring, ring_size, iterations, 0);
    bench_free_pages(ring);
    return ops;
}

/* Per thread: 140 div N + 1 passes of 1,048,576, ring of 2039; chars (4i)&1023 + 1 / 16n + 1 /
 * 128n + 1. F_raw_perf_N: the 1,048,576 x 1/20 -> 52,429 per pass. */
typedef struct raw_thread {
    long passes, iterations;
    uint64_t ops;
} raw_thread;

static DWORD WINAPI raw_perf_thread(void *arg)
{
    enum { RING = 2039 };
    raw_thread *t = arg;
    char *ring[RING] = {0};
    uint64_t ops = 0;
    bench_wait_gate();
    for (long pass = 0; pass < t->passes; pass++)
        ops += raw_perf_pass(ring, RING, t->iterations, 1);
    t->ops = ops;
    return 0;
}

uint64_t wl_raw_perf_mt(const workload *w, double scale)
{
    int n = (int)w->param;
    raw_thread *t = bench_pages((size_t)n * sizeof *t);
    for (int k = 0; k < n; k++) {
        t[k].passes = 140 / n + 1;
        t[k].iterations = bench_scaled(1048576, 0.05 * scale);
    }
    bench_run_threads(n, raw_perf_thread, t, sizeof *t, 0);
    uint64_t ops = 0;
    for (int k = 0; k < n; k++)
        ops += t[k].ops;
    bench_free_pages(t);
    return ops;
}

/* raw_perf_1 measured after an unmeasured raw_perf_N (N = param) in the same process: seed 004's
 * single-threaded check once a contended phase has had the chance to switch arena affinity on. */
uint64_t wl_raw_perf_1_after_contention(const workload *w, double scale)
{
    wl_raw_perf_mt(w, scale);
    bench_timer_restart();
    return wl_raw_perf_1(w, scale);
}

/* ---- Single-threaded AllocMem (SingleThreadedAllocMem.pas) -------------------------------------- */
/* 1000 pointers x 100 rounds, prime 17, size cur%300000 + 1, zeroed (calloc); each block checked to
 * be all zero, then every byte written. F_allocmem: rounds x 1/10 -> 10. */
uint64_t wl_allocmem(const workload *w, double scale)
{
    (void)w;
    const long prime = 17, count = 1000;
    long rounds = bench_scaled(100, 0.1 * scale);
    unsigned char **p = bench_pages((size_t)count * sizeof *p);
    uint64_t ops = 0;
    int64_t cur = prime;
    for (long r = 0; r < rounds; r++)
        for (long i = 0; i < count; i++) {
            size_t size = (size_t)(cur % 300000) + 1;
            cur += prime;
            b_free(&ops, p[i]);
            p[i] = b_calloc(&ops, size);
            unsigned char any = 0;
            for (size_t k = 0; k < size; k++)
                any |= p[i][k];
            if (any)
                bench_fatal("calloc(1, %zu) returned a block that is not zero", size);
            memset(p[i], 0xA5, size);
        }
    for (long i = 0; i < count; i++)
        b_free(&ops, p[i]);
    bench_free_pages(p);
    return ops;
}

/* ---- Validate45-48 (MMvalidation.pas): GetMem + FreeMem of one size in a loop ----------------- */
/* Release-build counts: 45: 3 B x 100,000,000; 46: 4097 B x 40,000,000; 47: 256 KB + 17 x 50,000,000;
 * 48: 1 MB + 40 x 250,000. One factor for all four, F_validate45..48 = 1/5 (20,000,000 / 8,000,000 /
 * 10,000,000 / 50,000), so the ratios between them stay FastCode's. */
uint64_t wl_validate(const workload *w, double scale)
{
    static const struct {
        size_t size;
        double iterations, factor;
    } v[4] = {{3, 100e6, 0.2}, {4097, 40e6, 0.2}, {256 * 1024 + 17, 50e6, 0.2},
              {40 + 1024 * 1024, 250e3, 0.2}};
    int k = (int)w->param - 45;
    long iterations = bench_scaled(v[k].iterations, v[k].factor * scale);
    uint64_t ops = 0;
    for (long i = 0; i < iterations; i++) {
        void *p = b_malloc(&ops, v[k].size);
        *(volatile char *)p = 1;
        b_free(&ops, p);
    }
    return ops;
}
