/*
 * test_large_block_cache — freed large blocks kept mapped for the next allocation that fits
 * (FastMM_SetLargeBlockCacheLimit, src/blocks/large_blocks.h):
 *   - a freed 1 MiB block stays mapped (the usage does not drop) and the next 1 MiB request gets the
 *     same region; AllocMem of a recycled region is zero although the freed block was dirty;
 *   - a stale pointer into a cached region is refused (FreeMem -1, one event, no crash);
 *   - a region is reused for a smaller request, with the size of the request (the usable size is the
 *     size oracle's), and later in-place growth into its slack makes no mapping; a request of less
 *     than half takes it only while the surplus of such blocks stays within the byte limit; the heap
 *     status counts the slack and the cached regions as unused address space, and its TotalAddrSpace
 *     is the memory usage;
 *   - the bounds: at most 8 regions (a full cache drops its smallest, or does not keep a smaller
 *     one), at most the byte limit, and a region unused for a second is
 *     returned at the next large operation; limit 0 turns the cache off;
 *   - FastMM_ProcessAllPendingFrees returns everything: the usage is back at the baseline;
 *   - debug mode caches nothing; a usage limit makes the cache give way without a limit event;
 *   - four threads allocate, fill, check and free 1-3 MiB blocks through the cache at once.
 * Runs on both Windows builds and on the host build (under ASan/UBSan and TSan).
 */
#include "test_util.h"

#define SEED 0x1A26Eull
#define MIB ((size_t)1 << 20)
#define GRANULE ((size_t)64 << 10)

static size_t baseline;

static size_t usage(void)
{
    return FastMM_GetCurrentMemoryUsage();
}

/* The bytes a large block of `n` user bytes maps: header and granule rounding. */
static size_t region_of(size_t n)
{
    return (n + 64 + GRANULE - 1) / GRANULE * GRANULE;
}

static void back_to_baseline(const char *where)
{
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_MSG(usage() == baseline, "%s: usage %zu, baseline %zu", where, usage(), baseline);
}

static void reuse(void)
{
    SECTION("a freed region is kept and handed to the next request of its size");
    uint8_t *p = FastMM_GetMem(MIB);
    if (!CHECK(p != NULL))
        return;
    memset(p, 0xAB, MIB);
    size_t held = usage();
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    CHECK_MSG(usage() == held, "the freed region was unmapped: usage %zu, %zu while held", usage(), held);
    uint8_t *q = FastMM_GetMem(MIB);
    CHECK_MSG(q == p, "the request got %p, not the cached %p", (void *)q, (void *)p);
    CHECK_EQ_SIZE(usage(), held);
    CHECK_EQ_SIZE(FastMM_BlockMaximumUserBytes(q), region_of(MIB) - 64);
    CHECK_EQ_INT(FastMM_FreeMem(q), 0);

    uint8_t *z = FastMM_AllocMem(MIB);
    if (CHECK(z == p)) {
        size_t bad = 0;
        CHECK_MSG(tu_all_bytes_equal(z, MIB, 0, &bad), "AllocMem of a recycled region: byte %zu is 0x%02x", bad, z[bad]);
    }
    CHECK_EQ_INT(FastMM_FreeMem(z), 0);

    SECTION("a stale pointer into a cached region is refused");
    tu_events_reset();
    CHECK_EQ_INT(FastMM_FreeMem(z), -1);
    CHECK_EQ_INT(tu_events_total(), 1);
    CHECK(FastMM_ReallocMem(z, 10) == NULL);
    CHECK_EQ_SIZE(FastMM_BlockMaximumUserBytes(z + 4096), 0);
    CHECK_EQ_INT(tu_events_total(), 3);
    tu_events_reset();
    back_to_baseline("reuse");
}

static void fit(void)
{
    SECTION("a region serves a smaller request, with the request's size; much smaller within a bound");
    size_t big = 2 * MIB;
    uint8_t *p = FastMM_GetMem(big);
    if (!CHECK(p != NULL))
        return;
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    size_t held = usage();
    size_t smaller = big / 2 + big / 8;
    uint8_t *q = FastMM_GetMem(smaller);
    CHECK_MSG(q == p, "a %zu-byte request got %p, not the cached %p", smaller, (void *)q, (void *)p);
    CHECK_EQ_SIZE(FastMM_BlockMaximumUserBytes(q), region_of(smaller) - 64);
    tu_pattern_fill(q, smaller, tu_pattern_key(SEED, 1, 0));
    /* The slack and the cache are address space the heap status accounts for, as unused. */
    uint8_t *cached = FastMM_GetMem(4 * MIB);
    FastMM_FreeMem(cached);
    FastMM_HeapStatus status;
    CHECK_EQ_INT(FastMM_GetHeapStatus(&status, 1000), 1);
    CHECK_EQ_SIZE(status.TotalAddrSpace, usage());
    CHECK_MSG(status.Unused >= region_of(4 * MIB) + (region_of(big) - region_of(smaller)),
              "heap status Unused %zu misses the cached region or the slack", status.Unused);
    held = usage();
    /* Growth into the slack: in place, no mapping. */
    uint8_t *r = FastMM_ReallocMem(q, big - 1000);
    CHECK_MSG(r == q, "growth into the slack moved the block to %p", (void *)r);
    CHECK_EQ_SIZE(usage(), held);
    if (r)
        CHECK_PATTERN(r, smaller, tu_pattern_key(SEED, 1, 0));
    CHECK_EQ_INT(FastMM_FreeMem(r), 0);

    /* Still a large block (above 558,904 bytes), but less than half the region: it takes the region
     * while the surplus of such blocks stays within the cache's limit, and not beyond. */
    uint8_t *s = FastMM_GetMem(600000);
    CHECK_MSG(s == p, "a request of less than half the size got %p, not the cached %p", (void *)s, (void *)p);
    CHECK_EQ_SIZE(usage(), held);
    tu_pattern_fill(s, 600000, tu_pattern_key(SEED, 2, 0));
    FastMM_SetLargeBlockCacheLimit(region_of(big) + GRANULE);
    uint8_t *t = FastMM_GetMem(big);
    CHECK_EQ_INT(FastMM_FreeMem(t), 0);
    held = usage();
    uint8_t *u = FastMM_GetMem(600000);
    CHECK_MSG(u != t, "a second small request took a region beyond the surplus limit");
    CHECK_MSG(usage() > held, "a second small request beyond the surplus limit made no mapping");
    /* Freeing the first gives its surplus back: the cached region serves the next one. */
    if (s)
        CHECK_PATTERN(s, 600000, tu_pattern_key(SEED, 2, 0));
    CHECK_EQ_INT(FastMM_FreeMem(s), 0);
    CHECK_EQ_INT(FastMM_FreeMem(u), 0);
    held = usage();
    uint8_t *v = FastMM_GetMem(600000);
    CHECK_MSG(v == t || v == p, "after the surplus came back a small request got %p, not a cached region",
              (void *)v);
    CHECK_EQ_SIZE(usage(), held);
    CHECK_EQ_INT(FastMM_FreeMem(v), 0);
    FastMM_SetLargeBlockCacheLimit(32 * MIB);
    back_to_baseline("fit");
}

static void bounds(void)
{
    SECTION("at most 8 regions, at most the byte limit");
    enum { COUNT = 12 };
    uint8_t *blocks[COUNT];
    uint8_t *larger = FastMM_GetMem(3 * MIB);
    uint8_t *smaller = FastMM_GetMem(600000);
    for (int i = 0; i < COUNT; i++)
        blocks[i] = FastMM_GetMem(MIB);
    for (int i = 0; i < COUNT; i++)
        CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
    size_t full = usage() - region_of(3 * MIB) - region_of(600000);
    CHECK_MSG(full <= baseline + 8 * region_of(MIB), "%zu bytes kept for 12 freed 1 MiB blocks",
              full - baseline);
    CHECK_MSG(full >= baseline + 8 * region_of(MIB), "fewer than 8 regions kept: %zu bytes", full - baseline);
    /* Full: a larger region makes the smallest go; a smaller one is not kept. */
    CHECK_EQ_INT(FastMM_FreeMem(larger), 0);
    CHECK_MSG(usage() == full + region_of(3 * MIB) - region_of(MIB) + region_of(600000),
              "a freed 3 MiB block did not take the place of a 1 MiB region: %zu bytes", usage() - baseline);
    CHECK_EQ_INT(FastMM_FreeMem(smaller), 0);
    CHECK_MSG(usage() == full + region_of(3 * MIB) - region_of(MIB),
              "a region smaller than every cached one was kept: %zu bytes", usage() - baseline);
    FastMM_SetLargeBlockCacheLimit(3 * MIB);
    CHECK_EQ_SIZE(FastMM_GetLargeBlockCacheLimit(), 3 * MIB);
    CHECK_MSG(usage() <= baseline + 3 * MIB, "the 3 MiB limit keeps %zu bytes", usage() - baseline);
    FastMM_SetLargeBlockCacheLimit(0);
    CHECK_EQ_SIZE(usage(), baseline);
    uint8_t *p = FastMM_GetMem(MIB);
    FastMM_FreeMem(p);
    CHECK_MSG(usage() == baseline, "with the cache off a freed block stays mapped");
    FastMM_SetLargeBlockCacheLimit(32 * MIB);

    SECTION("a region unused for a second goes back at the next large operation");
    p = FastMM_GetMem(MIB);
    FastMM_FreeMem(p);
    CHECK_EQ_SIZE(usage(), baseline + region_of(MIB));
    tu_sleep_ms(1300);
    uint8_t *q = FastMM_GetMem(3 * MIB);
    CHECK_MSG(usage() == baseline + region_of(3 * MIB), "the aged region is still kept: %zu bytes",
              usage() - baseline);
    FastMM_FreeMem(q);
    back_to_baseline("bounds");
}

static void debug_mode_and_limit(void)
{
    SECTION("debug mode caches nothing");
    FastMM_EnterDebugMode();
    uint8_t *p = FastMM_GetMem(MIB);
    CHECK(p != NULL);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    CHECK_MSG(usage() == baseline, "debug mode kept a freed large block: %zu bytes", usage() - baseline);
    FastMM_ExitDebugMode();
    back_to_baseline("debug mode");

    SECTION("under a usage limit the cache gives way");
    p = FastMM_GetMem(MIB);
    FastMM_FreeMem(p);
    FastMM_SetMemoryUsageLimit(usage() + MIB);
    tu_events_reset();
    uint8_t *q = FastMM_GetMem(MIB + MIB / 2);
    CHECK_MSG(q != NULL, "the allocation failed although the cache held the memory");
    CHECK_EQ_INT(tu_events_count(FastMM_EventMemoryLimitExceeded), 0);
    FastMM_FreeMem(q);
    FastMM_SetMemoryUsageLimit(0);
    back_to_baseline("limit");
}

static tu_atomic_long bad_patterns;

static void worker(void *arg)
{
    tu_rng rng;
    tu_rng_seed(&rng, SEED + (uint64_t)(uintptr_t)arg);
    for (int round = 0; round < 60; round++) {
        size_t n = MIB + (size_t)tu_rng_below(&rng, 2 * MIB);
        uint8_t *p = FastMM_GetMem(n);
        if (!p) {
            tu_atomic_increment(&bad_patterns);
            continue;
        }
        uint64_t key = tu_pattern_key(SEED, (uint64_t)(uintptr_t)arg, (uint64_t)round);
        tu_pattern_fill(p, n, key);
        if (tu_pattern_find_mismatch(p, 0, n, key) != SIZE_MAX)
            tu_atomic_increment(&bad_patterns);
        FastMM_FreeMem(p);
    }
}

static void threads(void)
{
    SECTION("four threads through the cache");
    tu_thread handles[4];
    for (unsigned i = 0; i < 4; i++)
        handles[i] = tu_thread_start(worker, (void *)(uintptr_t)i, 64 * 1024);
    CHECK_EQ_INT((int)tu_thread_join_all(handles, 4, 120000), 4);
    CHECK_EQ_INT((int)tu_atomic_load(&bad_patterns), 0);
    back_to_baseline("threads");
}

int main(void)
{
    tu_init("test_large_block_cache");
    tu_events_install(TU_KEEP_LAST_EVENT);
    CHECK_EQ_SIZE(FastMM_GetLargeBlockCacheLimit(), 32 * MIB);
    FastMM_ProcessAllPendingFrees();
    baseline = usage();
    reuse();
    fit();
    bounds();
    debug_mode_and_limit();
    threads();
    return test_finish();
}
