/*
 * test_c_api — the C family, the tuning functions, heap status, block walking, the contention
 * counters and the event log settings:
 *   - fm5_malloc(0) gives distinct freeable blocks; fm5_calloc and FastMM_AllocMem zero what they
 *     hand out even when they reuse a block just freed with other content (small, medium, large),
 *     and when they cut medium blocks from unfed space that a dirtied block was given back to;
 *     fm5_realloc(NULL, n) allocates, fm5_realloc(p, 0) frees; fm5_free(NULL) does nothing;
 *     fm5_usable_size agrees with FastMM_BlockMaximumUserBytes; FastMM_ReallocMem rejects NULL and 0;
 *   - fm5_owns answers 1 for every byte of small, medium and large blocks and 0 for the stack, a
 *     static, another heap's block and NULL, with no event;
 *   - optimization strategies 0/1/2 are accepted and reported, others refused with an event;
 *   - minimum alignments nest (the coarsest entered applies), unbalanced or invalid values are
 *     refused with an event, and blocks follow the alignment in force;
 *   - the usage summary and heap status grow by at least the usable size of known blocks, their
 *     fields are consistent with each other, and return to the baseline after the blocks are freed;
 *   - FastMM_WalkBlocks reports kinds and sizes consistently and stops when the callback asks;
 *   - the contention counters never decrease;
 *   - the arena counts are FastMM5's 4 / 4 / 8, refused (with an event) once fm5 holds memory or
 *     above the maximum; arena affinity is off, and switches on and off while threads allocate;
 *   - the event log can be pointed at a file, receives an event there, and can be deleted.
 */
#include "test_util.h"

#define SEED 0xCA91ull

static size_t baseline_bytes;

/* ---------------------------------------------------------------------------------------------- */

static void malloc_zero(void)
{
    SECTION("fm5_malloc(0) and FastMM_GetMem(0)");
    void *a = fm5_malloc(0), *b = fm5_malloc(0);
    CHECK(a != NULL && b != NULL && a != b);
    void *c = FastMM_GetMem(0), *d = FastMM_GetMem(0);
    CHECK(c != NULL && d != NULL && c != d && c != a && c != b && d != a && d != b);
    CHECK(tu_is_aligned(a, TU_DEFAULT_ALIGNMENT) && tu_is_aligned(c, TU_DEFAULT_ALIGNMENT));
    CHECK_EQ_SIZE(fm5_usable_size(a), FastMM_BlockMaximumUserBytes(a));
    fm5_free(a);
    fm5_free(b);
    CHECK_EQ_INT(FastMM_FreeMem(c), 0);
    CHECK_EQ_INT(FastMM_FreeMem(d), 0);
    CHECK_EQ_INT(tu_events_total(), 0);
}

static void zeroing(void)
{
    SECTION("fm5_calloc and FastMM_AllocMem zero reused blocks");
    static const size_t sizes[] = {1, 7, 100, 1000, 2622, 2623, 50000, 558904, 558905, 700000, 3000000};
    size_t reused = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        for (int variant = 0; variant < 4; variant++) {
            /* Dirty a block of the same size and free it: the zeroing call most likely gets it back,
             * so zeros cannot come from fresh pages alone. */
            uint8_t *dirty = (uint8_t *)fm5_malloc(n);
            if (!CHECK(dirty != NULL))
                continue;
            memset(dirty, 0xAB, fm5_usable_size(dirty));
            fm5_free(dirty);
            uint8_t *z;
            if (variant == 0)
                z = (uint8_t *)fm5_calloc(n, 1);
            else if (variant == 1)
                z = (uint8_t *)((n % 4 == 0) ? fm5_calloc(n / 4, 4) : fm5_calloc(1, n));
            else if (variant == 2)
                z = (uint8_t *)FastMM_AllocMem(n);
            else {
                /* Past the thread's cache: a medium block carved last goes back to its span's unfed
                 * space, and is carved there again, from bytes that are no longer fresh. */
                FastMM_ProcessAllPendingFrees();
                z = (uint8_t *)FastMM_AllocMem(n);
            }
            if (!CHECK_MSG(z != NULL, "zeroing allocation %d of %zu bytes failed", variant, n))
                continue;
            reused += z == dirty;
            size_t bad = 0;
            int zero = tu_all_bytes_equal(z, n, 0, &bad); /* before the message reads `bad` */
            CHECK_MSG(zero, "variant %d, %zu bytes at %p: byte %zu is 0x%02x", variant, n, (void *)z, bad, z[bad]);
            CHECK(FastMM_BlockMaximumUserBytes(z) >= n);
            fm5_free(z);
        }
    }
    tu_info("%zu of the zeroed blocks reused the dirtied block", reused);
    CHECK(reused > 0);

    /* AllocMem skips the fill where the OS's zeros are known untouched (a medium block cut from a new
     * span's unfed space): a dirtied block given back to the unfed space, then cut again in smaller
     * pieces, the first inside it, the next across its lower end, the last below it. */
    uint8_t *big = (uint8_t *)FastMM_GetMem(60000);
    if (CHECK(big != NULL)) {
        memset(big, 0xCD, FastMM_BlockMaximumUserBytes(big));
        CHECK_EQ_INT(FastMM_FreeMem(big), 0);
        FastMM_ProcessAllPendingFrees();
        uint8_t *piece[5];
        for (int k = 0; k < 5; k++) {
            piece[k] = (uint8_t *)FastMM_AllocMem(25000);
            if (!CHECK(piece[k] != NULL))
                continue;
            size_t bad = 0;
            int zero = tu_all_bytes_equal(piece[k], 25000, 0, &bad);
            CHECK_MSG(zero, "piece %d at %p (the dirtied block at %p): byte %zu is 0x%02x", k, (void *)piece[k],
                      (void *)big, bad, piece[k][bad]);
        }
        for (int k = 0; k < 5; k++)
            if (piece[k])
                fm5_free(piece[k]);
    }

    /* A zero count or size: either NULL or a freeable block, never a crash. */
    void *p = fm5_calloc(0, 10);
    fm5_free(p);
    p = fm5_calloc(10, 0);
    fm5_free(p);
    CHECK_EQ_INT(tu_events_total(), 0);
}

static void realloc_semantics(void)
{
    SECTION("fm5_realloc, fm5_free, fm5_usable_size");
    size_t before = tu_allocated_bytes();
    uint8_t *p = (uint8_t *)fm5_realloc(NULL, 300);
    if (!CHECK(p != NULL))
        return;
    CHECK(fm5_usable_size(p) >= 300);
    CHECK_EQ_SIZE(fm5_usable_size(p), FastMM_BlockMaximumUserBytes(p));
    uint64_t key = tu_pattern_key(SEED, 1, 0);
    tu_pattern_fill(p, 300, key);
    uint8_t *q = (uint8_t *)fm5_realloc(p, 100000);
    if (CHECK(q != NULL)) {
        CHECK_PATTERN(q, 300, key);
        tu_pattern_fill(q, 100000, key);
        p = q;
    }
    q = (uint8_t *)fm5_realloc(p, 50);
    if (CHECK(q != NULL)) {
        CHECK_PATTERN(q, 50, key);
        p = q;
    }
    CHECK(fm5_realloc(p, 0) == NULL);
    CHECK_EQ_SIZE(tu_allocated_bytes(), before);
    tu_walk w;
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    CHECK_MSG(tu_walk_find(&w, p) == NULL, "fm5_realloc(%p, 0) left the block in use", (void *)p);
    tu_walk_free(&w);

    fm5_free(NULL);
    CHECK_EQ_SIZE(fm5_usable_size(NULL), 0);
    CHECK_EQ_INT(tu_events_total(), 0);

    SECTION("FastMM_ReallocMem and FastMM_FreeMem reject NULL; ReallocMem to size 0 keeps a block");
    CHECK_EQ_INT(FastMM_FreeMem(NULL), -1);
    CHECK(tu_events_total() >= 1);
    tu_events_reset();
    CHECK(FastMM_ReallocMem(NULL, 10) == NULL);
    CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidRealloc), 1);
    static const size_t zero_from[] = {64, 2000, 100000, 700000};
    for (size_t i = 0; i < sizeof zero_from / sizeof zero_from[0]; i++) {
        p = (uint8_t *)FastMM_GetMem(zero_from[i]);
        if (!CHECK(p != NULL))
            continue;
        tu_events_reset();
        /* fm5.h: size 0 is a resize to an empty block, not a free; the block must still be freed. */
        q = (uint8_t *)FastMM_ReallocMem(p, 0);
        CHECK_MSG(q != NULL, "FastMM_ReallocMem(%p, 0) from %zu bytes returned NULL", (void *)p, zero_from[i]);
        CHECK_EQ_INT(tu_events_total(), 0);
        if (q) {
            tu_walk zero_walk;
            tu_walk_take(&zero_walk, FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock, 1);
            CHECK_MSG(tu_walk_find(&zero_walk, q) != NULL, "the block resized to 0 bytes is not in use");
            tu_walk_free(&zero_walk);
            CHECK_EQ_INT(FastMM_FreeMem(q), 0);
        }
    }
    tu_events_reset();
}

/* ---------------------------------------------------------------------------------------------- */

static void ownership(void)
{
    SECTION("fm5_owns: fm5's blocks against other memory");
    static const size_t sizes[] = {1, 64, 2000, 3000, 60000, 300000, 600000, 3000000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = fm5_malloc(sizes[i]);
        if (!CHECK(p != NULL))
            continue;
        size_t usable = fm5_usable_size(p);
        CHECK_MSG(fm5_owns(p) && fm5_owns(p + usable / 2) && fm5_owns(p + usable - 1),
                  "fm5_owns misses a block of %zu bytes at %p", sizes[i], (void *)p);
        fm5_free(p);
    }
    int local = 0;
    static int in_image;
    void *foreign = malloc(100);
    CHECK_EQ_INT(fm5_owns(&local), 0);
    CHECK_EQ_INT(fm5_owns(&in_image), 0);
    CHECK_EQ_INT(fm5_owns(NULL), 0);
    if (CHECK(foreign != NULL))
        CHECK_EQ_INT(fm5_owns(foreign), 0);
    free(foreign);
    CHECK_EQ_INT(tu_events_total(), 0);
}

static void strategies(void)
{
    SECTION("optimization strategy");
    CHECK_EQ_INT(FastMM_GetCurrentOptimizationStrategy(), FastMM_Balanced);
    static const int valid[] = {FastMM_OptimizeForSpeed, FastMM_OptimizeForLowMemoryUsage, FastMM_Balanced};
    for (size_t i = 0; i < 3; i++) {
        CHECK_EQ_INT(FastMM_SetOptimizationStrategy(valid[i]), 0);
        CHECK_EQ_INT(FastMM_GetCurrentOptimizationStrategy(), valid[i]);
        /* New spans follow the strategy: allocate past one span's worth, then give it all back. */
        void *blocks[40];
        for (size_t b = 0; b < 40; b++) {
            blocks[b] = FastMM_GetMem(200000);
            CHECK(blocks[b] != NULL);
        }
        for (size_t b = 0; b < 40; b++)
            FastMM_FreeMem(blocks[b]);
        CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    }
    static const int invalid[] = {-1, 3, 1000};
    for (size_t i = 0; i < 3; i++) {
        tu_events_reset();
        CHECK_EQ_INT(FastMM_SetOptimizationStrategy(invalid[i]), -1);
        CHECK_EQ_INT(FastMM_GetCurrentOptimizationStrategy(), FastMM_Balanced);
        CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidArgument), 1);
    }
    tu_events_reset();
}

static void check_small_alignment(unsigned alignment)
{
    void *blocks[512];
    size_t n = 0;
    for (size_t size = 0; size < 300; size++)
        blocks[n++] = FastMM_GetMem(size);
    for (size_t size = 2522; size <= 2622; size++)
        blocks[n++] = FastMM_GetMem(size);
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(blocks[i] && tu_is_aligned(blocks[i], alignment), "block %p under alignment %u", blocks[i],
                  alignment);
        FastMM_FreeMem(blocks[i]);
    }
}

static void alignment(void)
{
    SECTION("minimum address alignment");
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), TU_DEFAULT_ALIGNMENT);
    CHECK_EQ_INT(FastMM_EnterMinimumAddressAlignment(32), 0);
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), 32);
    check_small_alignment(32);
    CHECK_EQ_INT(FastMM_EnterMinimumAddressAlignment(16), 0);
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), 32);
    CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(32), 0);
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), 16);
    check_small_alignment(16);
    CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(16), 0);
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), TU_DEFAULT_ALIGNMENT);

    /* The same value nests too. */
    CHECK_EQ_INT(FastMM_EnterMinimumAddressAlignment(64), 0);
    CHECK_EQ_INT(FastMM_EnterMinimumAddressAlignment(64), 0);
    CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(64), 0);
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), 64);
    check_small_alignment(64);
    CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(64), 0);
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), TU_DEFAULT_ALIGNMENT);

    /* 8 is valid everywhere, and Win64 never goes below 16. */
    CHECK_EQ_INT(FastMM_EnterMinimumAddressAlignment(8), 0);
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), TU_DEFAULT_ALIGNMENT);
    CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(8), 0);

    tu_events_reset();
    CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(16), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidArgument), 1);
    static const unsigned invalid[] = {0, 1, 4, 12, 24, 128, 4096};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        tu_events_reset();
        CHECK_EQ_INT(FastMM_EnterMinimumAddressAlignment(invalid[i]), -1);
        CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(invalid[i]), -1);
        CHECK_MSG(tu_events_count(FastMM_EventInvalidArgument) == 2, "alignment %u: %ld InvalidArgument events",
                  invalid[i], (long)tu_events_count(FastMM_EventInvalidArgument));
    }
    CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), TU_DEFAULT_ALIGNMENT);
    tu_events_reset();
}

/* ---------------------------------------------------------------------------------------------- */

static FastMM_HeapStatus heap_status(void)
{
    FastMM_HeapStatus h;
    memset(&h, 0xCC, sizeof h); /* every field must be written */
    CHECK_EQ_INT(FastMM_GetHeapStatus(&h, 2000), 1);
    CHECK_MSG(h.TotalFree == h.FreeSmall + h.FreeBig + h.Unused, "TotalFree %zu != %zu + %zu + %zu", h.TotalFree,
              h.FreeSmall, h.FreeBig, h.Unused);
    CHECK_MSG(h.TotalCommitted >= h.TotalAllocated, "committed %zu < allocated %zu", h.TotalCommitted,
              h.TotalAllocated);
    CHECK_MSG(h.TotalAddrSpace == h.TotalCommitted + h.TotalUncommitted, "address space %zu != %zu + %zu",
              h.TotalAddrSpace, h.TotalCommitted, h.TotalUncommitted);
    CHECK_MSG(h.TotalAllocated + h.TotalFree <= h.TotalAddrSpace, "allocated %zu + free %zu > address space %zu",
              h.TotalAllocated, h.TotalFree, h.TotalAddrSpace);
    CHECK_EQ_SIZE(h.HeapErrorCode, 0);
    return h;
}

static FastMM_UsageSummary usage_summary(void)
{
    FastMM_UsageSummary s;
    memset(&s, 0, sizeof s);
    CHECK_EQ_INT(FastMM_GetUsageSummary(&s), 1);
    double used = (double)s.AllocatedBytes + (double)s.OverheadBytes;
    if (used > 0) {
        double expected = 100.0 * (double)s.AllocatedBytes / used;
        double diff = s.EfficiencyPercentage - expected;
        CHECK_MSG(diff < 0.01 && diff > -0.01, "efficiency %.4f%%, allocated %zu, overhead %zu",
                  s.EfficiencyPercentage, s.AllocatedBytes, s.OverheadBytes);
    }
    CHECK(s.EfficiencyPercentage >= 0.0 && s.EfficiencyPercentage <= 100.0);
    return s;
}

static void heap_accounting(void)
{
    SECTION("usage summary and heap status");
    FastMM_UsageSummary s0 = usage_summary();
    FastMM_HeapStatus h0 = heap_status();
    enum { SMALL = 100, MEDIUM = 10, LARGE = 2 };
    void *blocks[SMALL + MEDIUM + LARGE];
    size_t n = 0, usable = 0;
    for (size_t i = 0; i < SMALL; i++)
        blocks[n++] = FastMM_GetMem(100 + i);
    for (size_t i = 0; i < MEDIUM; i++)
        blocks[n++] = FastMM_GetMem(30000 + 1000 * i);
    for (size_t i = 0; i < LARGE; i++)
        blocks[n++] = FastMM_GetMem(1000000 + 100000 * i);
    for (size_t i = 0; i < n; i++) {
        if (!CHECK(blocks[i] != NULL))
            return;
        usable += FastMM_BlockMaximumUserBytes(blocks[i]);
    }
    size_t whole = 0;
    tu_walk w;
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    for (size_t i = 0; i < n; i++) {
        const FastMM_WalkBlockInfo *info = tu_walk_find(&w, blocks[i]);
        if (CHECK(info != NULL))
            whole += info->BlockSize;
    }
    tu_walk_free(&w);

    FastMM_UsageSummary s1 = usage_summary();
    FastMM_HeapStatus h1 = heap_status();
    size_t grown = s1.AllocatedBytes - s0.AllocatedBytes;
    CHECK_MSG(grown >= usable && grown <= whole, "AllocatedBytes grew by %zu for %zu usable (%zu with headers)", grown,
              usable, whole);
    grown = h1.TotalAllocated - h0.TotalAllocated;
    CHECK_MSG(grown >= usable && grown <= whole, "TotalAllocated grew by %zu for %zu usable (%zu with headers)", grown,
              usable, whole);
    CHECK_MSG(FastMM_GetCurrentMemoryUsage() >= h1.TotalAllocated, "committed %zu below allocated %zu",
              FastMM_GetCurrentMemoryUsage(), h1.TotalAllocated);
    CHECK(h1.TotalCommitted > h0.TotalCommitted);

    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    FastMM_UsageSummary s2 = usage_summary();
    FastMM_HeapStatus h2 = heap_status();
    CHECK_EQ_SIZE(s2.AllocatedBytes, s0.AllocatedBytes);
    CHECK_EQ_SIZE(h2.TotalAllocated, h0.TotalAllocated);
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(tu_walk_find(&w, blocks[i]) == NULL, "freed block %p still walks as used", blocks[i]);
    tu_walk_free(&w);
}

static int FM5_CALL stop_at_first(const FastMM_WalkBlockInfo *info, void *user)
{
    (void)info;
    ++*(int *)user;
    return 1;
}

static void walking(void)
{
    SECTION("FastMM_WalkBlocks");
    void *blocks[3] = {FastMM_GetMem(50), FastMM_GetMem(5000), FastMM_GetMem(600000)};
    CHECK(blocks[0] && blocks[1] && blocks[2]);
    int calls = 0;
    CHECK_EQ_INT(FastMM_WalkBlocks(stop_at_first, &calls, 0, 0, 1000), 0);
    CHECK_EQ_INT(calls, 1);

    tu_walk w;
    tu_walk_take(&w, 0, 0);
    CHECK_EQ_INT(w.result, 1);
    size_t spans = 0;
    for (size_t i = 0; i < w.count; i++) {
        const FastMM_WalkBlockInfo *b = &w.items[i];
        switch (b->Kind) {
        case FastMM_SmallBlock:
            CHECK_MSG(b->BlockSize == b->UsableSize + TU_SMALL_HEADER, "small %p: %zu/%zu", b->Address, b->BlockSize,
                      b->UsableSize);
            break;
        case FastMM_MediumBlock:
            CHECK_MSG(b->BlockSize == b->UsableSize + TU_MEDIUM_HEADER && tu_is_aligned(b->Address, 64),
                      "medium %p: %zu/%zu", b->Address, b->BlockSize, b->UsableSize);
            break;
        case FastMM_LargeBlock:
            CHECK_MSG(b->BlockSize >= b->UsableSize + TU_LARGE_HEADER && ((uintptr_t)b->Address & 0xFFFF) == 64,
                      "large %p: %zu/%zu", b->Address, b->BlockSize, b->UsableSize);
            break;
        case FastMM_SmallBlockSpan:
        case FastMM_MediumBlockSpan:
            CHECK_MSG(b->UsableSize == 0 && b->BlockSize > 0, "span %p: %zu/%zu", b->Address, b->BlockSize,
                      b->UsableSize);
            spans++;
            break;
        default:
            CHECK_MSG(0, "unknown kind %u at %p", b->Kind, b->Address);
        }
    }
    CHECK(spans >= 2); /* a small-block span and the medium span holding it */
    for (size_t i = 0; i < 3; i++) {
        const FastMM_WalkBlockInfo *b = tu_walk_find(&w, blocks[i]);
        CHECK(b != NULL && !b->IsFree && b->Kind == tu_expected_kind(i == 0 ? 50 : i == 1 ? 5000 : 600000));
    }
    tu_walk_free(&w);

    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    for (size_t i = 0; i < w.count; i++)
        CHECK_MSG(!w.items[i].IsFree && (w.items[i].Kind & TU_BLOCK_KINDS), "used-only walk shows %p free=%d kind %u",
                  w.items[i].Address, w.items[i].IsFree, w.items[i].Kind);
    tu_walk_free(&w);
    tu_walk_take(&w, FastMM_LargeBlock, 0);
    for (size_t i = 0; i < w.count; i++)
        CHECK_EQ_INT(w.items[i].Kind, FastMM_LargeBlock);
    CHECK(tu_walk_find(&w, blocks[2]) != NULL);
    tu_walk_free(&w);
    for (size_t i = 0; i < 3; i++)
        FastMM_FreeMem(blocks[i]);
}

/* ---------------------------------------------------------------------------------------------- */

static void contend(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100000; i++) {
        void *p = FastMM_GetMem(48);
        void *q = FastMM_GetMem(5000);
        FastMM_FreeMem(p);
        FastMM_FreeMem(q);
    }
}

static void contention_counters(void)
{
    SECTION("contention counters");
    size_t before[3] = {FastMM_SmallBlockThreadContentionCount(), FastMM_MediumBlockThreadContentionCount(),
                        FastMM_LargeBlockThreadContentionCount()};
    tu_thread threads[6];
    for (size_t i = 0; i < 6; i++)
        threads[i] = tu_thread_start(contend, NULL, 0);
    if (tu_thread_join_all(threads, 6, 60000) != 6)
        tu_abort_stuck("watchdog: contention threads not done after 60 s");
    size_t after[3] = {FastMM_SmallBlockThreadContentionCount(), FastMM_MediumBlockThreadContentionCount(),
                       FastMM_LargeBlockThreadContentionCount()};
    tu_info("contention: small %zu -> %zu, medium %zu -> %zu, large %zu -> %zu", before[0], after[0], before[1],
            after[1], before[2], after[2]);
    for (size_t i = 0; i < 3; i++)
        CHECK(after[i] >= before[i]);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

/* ---------------------------------------------------------------------------------------------- */

/* Through the DLL: FastMM5's counts by default, no change once fm5 holds memory, and arena affinity
 * switched on and off (test_arena_affinity has the rest, in fm5_static). */
static void arena_settings(void)
{
    SECTION("arena counts and arena affinity");
    unsigned small = 0, medium = 0, large = 0;
    FastMM_GetArenaCounts(&small, &medium, &large);
    CHECK_EQ_INT(small, 4);
    CHECK_EQ_INT(medium, 4);
    CHECK_EQ_INT(large, 8);
    FastMM_GetArenaCounts(NULL, NULL, NULL);
    void *held = FastMM_GetMem(100);
    CHECK(held != NULL);
    tu_events_reset();
    CHECK_EQ_INT(FastMM_SetArenaCounts(8, 0, 0), -1);
    CHECK_EQ_INT(FastMM_SetArenaCounts(0, 0, FastMM_MaximumArenaCount + 1), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidArgument), 2);
    FastMM_GetArenaCounts(&small, &medium, &large);
    CHECK_EQ_INT(small, 4);
    CHECK_EQ_INT(large, 8);

    CHECK_EQ_INT(FastMM_GetAdaptiveSmallBlockArenaAffinity(), 0);
    CHECK_EQ_INT(FastMM_SetAdaptiveSmallBlockArenaAffinity(1), 0);
    CHECK_EQ_INT(FastMM_GetAdaptiveSmallBlockArenaAffinity(), 1);
    tu_thread threads[6];
    for (size_t i = 0; i < 6; i++)
        threads[i] = tu_thread_start(contend, NULL, 0);
    if (tu_thread_join_all(threads, 6, 60000) != 6)
        tu_abort_stuck("watchdog: contention threads not done after 60 s");
    CHECK_EQ_INT(FastMM_SetAdaptiveSmallBlockArenaAffinity(0), 1);
    CHECK_EQ_INT(FastMM_GetAdaptiveSmallBlockArenaAffinity(), 0);
    CHECK_EQ_INT(FastMM_FreeMem(held), 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    tu_events_reset();
}

/* ---------------------------------------------------------------------------------------------- */

static void event_log(unsigned default_file_mask, unsigned default_debug_mask)
{
    SECTION("event log settings");
    const unsigned all = 0x1FEu; /* bits 1..8: every event kind */
    CHECK_MSG((default_file_mask & all) == all, "default log-file mask 0x%x", default_file_mask);
    CHECK_MSG((default_debug_mask & all) == all, "default OutputDebugString mask 0x%x", default_debug_mask);
    FastMM_SetLogToFileEvents(all);
    CHECK_EQ_INT(FastMM_GetLogToFileEvents(), all);
    FastMM_SetOutputDebugStringEvents(0x2);
    CHECK_EQ_INT(FastMM_GetOutputDebugStringEvents(), 0x2);
    FastMM_SetOutputDebugStringEvents(0);

    /* The default name is the executable's path without its extension, plus a fixed suffix. */
    char exe[1024];
    tu_program_path(exe, sizeof exe);
    size_t len = strlen(exe);
    /* The extension fm5 strips: ".exe" on Windows, none for the host's programs. */
    size_t stem = TU_WINDOWS ? len - 4 : len;
    char folder_setting[8];
    const char *name = FastMM_GetEventLogFilename();
    if (CHECK(name != NULL) && len > 4 && !tu_getenv("FastMMLogFilePath", folder_setting, sizeof folder_setting)) {
        char expected[1024 + 64];
        snprintf(expected, sizeof expected, "%.*s_MemoryManager_EventLog.txt", (int)stem, exe);
        CHECK_MSG(tu_same_path(name, expected), "default log file \"%s\", expected \"%s\"", name, expected);
    }

    char path[1024 + 64];
    tu_temp_folder(path, 1024);
    size_t tlen = strlen(path);
    snprintf(path + tlen, sizeof path - tlen, "fm5_test_c_api_%lu.log", (unsigned long)tu_process_id());
    CHECK_EQ_INT(FastMM_SetEventLogFilename(path), 0);
    name = FastMM_GetEventLogFilename();
    CHECK_MSG(name && strcmp(name, path) == 0, "log file \"%s\", expected \"%s\"", name ? name : "(null)", path);
    FastMM_DeleteEventLogFile();

    /* One invalid free goes to the file, and names the pointer there. */
    FastMM_SetLogToFileEvents(1u << FastMM_EventInvalidFree);
    char local[16];
    tu_events_reset();
    CHECK_EQ_INT(FastMM_FreeMem(local), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidFree), 1);
    FastMM_SetLogToFileEvents(0);
    FILE *f = fopen(path, "rb");
    if (CHECK_MSG(f != NULL, "no event log at %s", path)) {
        static char content[65536];
        size_t got = fread(content, 1, sizeof content - 1, f);
        content[got] = 0;
        fclose(f);
        CHECK_MSG(got > 0 && tu_text_mentions_hex(content, (uintptr_t)local), "the log does not show %p: \"%.200s\"",
                  (void *)local, content);
    }
    CHECK_EQ_INT(FastMM_DeleteEventLogFile(), 1);
    CHECK(!tu_file_exists(path));
    CHECK_EQ_INT(FastMM_DeleteEventLogFile(), 0);

    /* A path too long for fm5 is refused and changes nothing. */
    static char too_long[40000];
    memset(too_long, 'a', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = 0;
    CHECK_EQ_INT(FastMM_SetEventLogFilename(too_long), -1);
    name = FastMM_GetEventLogFilename();
    CHECK(name && strcmp(name, path) == 0);
    CHECK_EQ_INT(FastMM_SetEventLogFilename(NULL), 0);
    name = FastMM_GetEventLogFilename();
    CHECK(name && strcmp(name, path) != 0);
    tu_events_reset();
}

int main(void)
{
    tu_init("test_c_api");
    /* Read before the harness turns file and debugger logging off. */
    unsigned default_file_mask = FastMM_GetLogToFileEvents();
    unsigned default_debug_mask = FastMM_GetOutputDebugStringEvents();
    tu_events_install(TU_KEEP_LAST_EVENT);
    baseline_bytes = tu_allocated_bytes();

    malloc_zero();
    zeroing();
    realloc_semantics();
    ownership();
    strategies();
    alignment();
    heap_accounting();
    walking();
    contention_counters();
    arena_settings();
    event_log(default_file_mask, default_debug_mask);

    SECTION("nothing left allocated");
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    CHECK_EQ_INT(tu_events_total(), 0);
    return test_finish();
}
