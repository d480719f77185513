/*
 * test_fastmm5_ports — the checks of FastMM5's own test programs, rewritten for fm5's C interface:
 *
 *   SizeClasses        sizes 1..70,000 in steps of 61 and 100K..2M in steps of 100K hold their
 *                      content; reallocations across all classes and a byte-by-byte growth across the
 *                      small/medium boundary keep the leading bytes; the allocated count returns.
 *   UsagePerSizeClass  churn in each size class from 500 to 500,000 bytes leaves nothing allocated,
 *                      the address space used at the peak stays within twice what is allocated, the
 *                      overhead does not ratchet up from phase to phase, and committed memory returns
 *                      to near its starting value once the empty medium spans that fm5 keeps for
 *                      a second (fm5.h) have gone back at the next medium call after it.
 *   DoubleFree (#73)   with the owning arena held by a walking thread, the first free of a block is
 *                      queued, the second fails with -1 and leaves the queue link untouched (no self
 *                      cycle); after draining, the allocator works and the block is handed out once.
 *   MultiThreadStress  4 threads x 20,000 blocks of up to 70,000 bytes, one in eight handed to
 *                      another thread to free; every block keeps its content and the allocated
 *                      count returns to its starting value.
 */
#include "test_util.h"

#define SEED 0xFA57300ull

static size_t baseline_bytes;
static size_t baseline_blocks;

/* ---------------------------------------------------------------------------------------------- */

static int fill_and_verify(void *p, size_t size, uint64_t key)
{
    if (!p)
        return 0;
    tu_pattern_fill(p, size, key);
    return tu_pattern_find_mismatch(p, 0, size, key) == SIZE_MAX;
}

static void size_classes(void)
{
    SECTION("SizeClasses: 1 to 70,000 bytes in steps of 61");
    size_t first_bad = 0, count = 0;
    for (size_t n = 1; n <= 70000; n += 61) {
        void *p = FastMM_GetMem(n);
        int ok = p && FastMM_BlockMaximumUserBytes(p) >= n && fill_and_verify(p, n, tu_pattern_key(SEED, n, 1));
        if (p && FastMM_FreeMem(p) != 0)
            ok = 0;
        if (!ok && !first_bad)
            first_bad = n;
        count++;
    }
    CHECK_MSG(first_bad == 0, "first failing size %zu of %zu", first_bad, count);

    SECTION("SizeClasses: 100,000 to 2,000,000 bytes in steps of 100,000");
    first_bad = 0;
    for (size_t n = 100000; n <= 2000000; n += 100000) {
        void *p = FastMM_GetMem(n);
        int ok = p && FastMM_BlockMaximumUserBytes(p) >= n && fill_and_verify(p, n, tu_pattern_key(SEED, n, 2));
        if (p && FastMM_FreeMem(p) != 0)
            ok = 0;
        if (!ok && !first_bad)
            first_bad = n;
    }
    CHECK_MSG(first_bad == 0, "first failing size %zu", first_bad);

    SECTION("SizeClasses: 60 reallocations across the classes");
    uint64_t key = tu_pattern_key(SEED, 3, 0);
    uint8_t *p = (uint8_t *)FastMM_GetMem(10);
    if (CHECK(p != NULL)) {
        size_t size = 10;
        tu_pattern_fill(p, size, key);
        for (size_t i = 1; i <= 60; i++) {
            size_t n = (i * 12345) % 300000 + 1;
            uint8_t *q = (uint8_t *)FastMM_ReallocMem(p, n);
            if (!CHECK_MSG(q != NULL, "realloc %zu: %zu -> %zu failed", i, size, n))
                break;
            size_t keep = size < n ? size : n;
            CHECK_MSG(tu_pattern_find_mismatch(q, 0, keep, key) == SIZE_MAX, "realloc %zu: %zu -> %zu lost content", i,
                      size, n);
            tu_pattern_fill_range(q, keep, n, key);
            p = q;
            size = n;
        }
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }

    SECTION("SizeClasses: growing byte by byte from 2000 to 2400 bytes");
    key = tu_pattern_key(SEED, 4, 0);
    p = (uint8_t *)FastMM_GetMem(2000);
    if (CHECK(p != NULL)) {
        tu_pattern_fill(p, 2000, key);
        size_t first_lost = 0;
        for (size_t n = 2001; n <= 2400; n++) {
            uint8_t *q = (uint8_t *)FastMM_ReallocMem(p, n);
            if (!CHECK_MSG(q != NULL, "realloc to %zu failed", n))
                break;
            if (tu_pattern_find_mismatch(q, 0, n - 1, key) != SIZE_MAX && !first_lost)
                first_lost = n;
            q[n - 1] = tu_pattern_byte(key, n - 1);
            p = q;
        }
        CHECK_MSG(first_lost == 0, "content lost when growing to %zu bytes", first_lost);
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }

    SECTION("SizeClasses: accounting");
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

/* ---------------------------------------------------------------------------------------------- */

typedef struct usage {
    size_t allocated;
    size_t overhead;
    size_t address_space;
    size_t committed;
} usage;

static usage measure(void)
{
    usage u;
    FastMM_UsageSummary s;
    FastMM_HeapStatus h;
    memset(&s, 0, sizeof s);
    memset(&h, 0, sizeof h);
    CHECK_EQ_INT(FastMM_GetUsageSummary(&s), 1);
    CHECK_EQ_INT(FastMM_GetHeapStatus(&h, 5000), 1);
    u.allocated = s.AllocatedBytes;
    u.overhead = s.OverheadBytes;
    u.address_space = h.TotalAddrSpace;
    u.committed = FastMM_GetCurrentMemoryUsage();
    return u;
}

#define MB (1024.0 * 1024.0)

static void usage_per_size_class(void)
{
    static const struct {
        size_t size;
        size_t churn;
    } phases[] = {{500, 10000}, {3000, 10000}, {10000, 10000}, {40000, 10000},
                  {70000, 10000}, {200000, 2000}, {500000, 1000}};
    const size_t working_set = 48u << 20; /* bytes live at each phase's peak */
    usage start = measure();
    size_t first_overhead = 0, peak_committed = start.committed;
    for (size_t ph = 0; ph < sizeof phases / sizeof phases[0]; ph++) {
        size_t size = phases[ph].size;
        char title[96];
        snprintf(title, sizeof title, "UsagePerSizeClass: %zu-byte blocks", size);
        SECTION(title);

        /* Peak: a working set of these blocks, all live. */
        size_t count = working_set / size;
        void **blocks = (void **)calloc(count, sizeof *blocks);
        if (!CHECK(blocks != NULL))
            return;
        size_t usable_sum = 0;
        for (size_t i = 0; i < count; i++) {
            blocks[i] = FastMM_GetMem(size);
            if (!CHECK_MSG(blocks[i] != NULL, "block %zu of %zu bytes", i, size))
                break;
            memset(blocks[i], 1, size);
            usable_sum += FastMM_BlockMaximumUserBytes(blocks[i]);
        }
        usage peak = measure();
        size_t grown_allocated = peak.allocated - start.allocated;
        size_t grown_space = peak.address_space > start.address_space ? peak.address_space - start.address_space : 0;
        size_t grown_committed = peak.committed > start.committed ? peak.committed - start.committed : 0;
        if (peak.committed > peak_committed)
            peak_committed = peak.committed;
        tu_info("peak: %zu blocks, allocated +%.1f MB, address space +%.1f MB, committed +%.1f MB", count,
                grown_allocated / MB, grown_space / MB, grown_committed / MB);
        CHECK_MSG(grown_allocated >= usable_sum, "allocated grew by %zu for %zu usable bytes", grown_allocated,
                  usable_sum);
        /* Spans are allocated whole, so a few megabytes of slack on top of the factor. */
        CHECK_MSG(grown_space <= 2 * grown_allocated + (8u << 20),
                  "address space grew by %.1f MB for %.1f MB allocated", grown_space / MB, grown_allocated / MB);
        CHECK_MSG(grown_committed <= 2 * grown_allocated + (8u << 20),
                  "committed memory grew by %.1f MB for %.1f MB allocated", grown_committed / MB,
                  grown_allocated / MB);
        for (size_t i = 0; i < count; i++)
            if (blocks[i])
                CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
        free(blocks);

        /* Churn, as FastMM5's test does it: one block at a time. */
        for (size_t i = 0; i < phases[ph].churn; i++) {
            void *p = FastMM_GetMem(size);
            if (!CHECK(p != NULL))
                break;
            memset(p, 1, size);
            FastMM_FreeMem(p);
        }

        /* A second later, the next medium call that reaches an arena (a size the thread's cache of
         * medium blocks cannot serve) gives back the empty spans kept beyond fm5.h's bound. */
        tu_sleep_ms(1100);
        FastMM_FreeMem(FastMM_GetMem(123456 + 4096 * ph));
        usage after = measure();
        tu_info("after: allocated %zu, overhead %.1f MB, committed %.1f MB", after.allocated, after.overhead / MB,
                after.committed / MB);
        CHECK_EQ_SIZE(after.allocated, start.allocated);
        CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
        if (ph == 0)
            first_overhead = after.overhead;
        /* What a phase frees must go back: a phase may keep a few spans and the kept empty medium
         * spans (fm5.h), not its working set. */
        CHECK_MSG(after.committed <= start.committed + (16u << 20) + FastMM_KeptMediumSpanBytes,
                  "after the %zu-byte phase %.1f MB stay committed (%.1f MB at the start)", size, after.committed / MB,
                  start.committed / MB);
    }

    SECTION("UsagePerSizeClass: address space");
    usage end = measure();
    CHECK_MSG(end.overhead < first_overhead * 4 + (16u << 20), "overhead grew from %.1f MB to %.1f MB",
              first_overhead / MB, end.overhead / MB);
    CHECK_EQ_SIZE(end.allocated, start.allocated);
    CHECK_MSG(end.committed <= start.committed + (16u << 20) + FastMM_KeptMediumSpanBytes &&
                  end.committed < peak_committed,
              "committed: %.1f MB at the start, %.1f MB at the peak, %.1f MB at the end", start.committed / MB,
              peak_committed / MB, end.committed / MB);
}

/* ---------------------------------------------------------------------------------------------- */

static void double_free_73(size_t size, unsigned kind)
{
    char title[96];
    snprintf(title, sizeof title, "DoubleFree (#73): %zu-byte %s block", size, tu_kind_name(kind));
    SECTION(title);
    CHECK_EQ_INT(tu_expected_kind(size), kind);
    void *keeper = FastMM_GetMem(size);
    void *target = FastMM_GetMem(size);
    if (!CHECK(keeper && target))
        return;
    tu_pattern_fill(target, size, 73);

    tu_lock_holder h;
    int held = tu_lock_holder_start(&h, target, kind);
    if (CHECK_MSG(held, "the walker never reached %p: the pending-free path was not exercised", target)) {
        CHECK_EQ_INT(FastMM_FreeMem(target), 0);
        uintptr_t link_after_first, link_after_second;
        memcpy(&link_after_first, target, sizeof link_after_first);
        tu_events_reset();
        CHECK_EQ_INT(FastMM_FreeMem(target), -1);
        memcpy(&link_after_second, target, sizeof link_after_second);
        CHECK_MSG(link_after_second != (uintptr_t)target, "the queued block %p points at itself", target);
        CHECK_EQ_SIZE(link_after_second, link_after_first);
        const void *pointer = NULL;
        tu_events_last(NULL, &pointer, NULL, NULL, 0);
        CHECK(tu_events_total() >= 1);
        CHECK_EQ_PTR(pointer, target);
    }
    CHECK_MSG(tu_lock_holder_stop(&h), "the walker did not finish");
    if (!held)
        FastMM_FreeMem(target);

    /* Draining must terminate (a self cycle would loop forever) and leave a working allocator that
     * hands the block out at most once. */
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    enum { MANY = 64 };
    void *blocks[MANY];
    size_t n = kind == FastMM_LargeBlock ? 8 : MANY, got = 0;
    int target_seen = 0;
    for (; got < n; got++) {
        blocks[got] = FastMM_GetMem(size);
        if (!CHECK(blocks[got] != NULL))
            break;
        target_seen += blocks[got] == target;
        tu_pattern_fill(blocks[got], size, got);
    }
    CHECK_MSG(target_seen <= 1, "%p handed out %d times", target, target_seen);
    for (size_t i = 0; i < got; i++)
        CHECK_PATTERN(blocks[i], size, i);
    CHECK_EQ_SIZE(tu_count_duplicates(blocks, got), 0);
    for (size_t i = 0; i < got; i++)
        CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
    CHECK_EQ_INT(FastMM_FreeMem(keeper), 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

/* ---------------------------------------------------------------------------------------------- */

#define STRESS_THREADS 4
#define STRESS_ITERATIONS 20000
#define STRESS_MAX_SIZE 70000
#define MAILBOX_SLOTS 64

static void *volatile mailbox[MAILBOX_SLOTS];
static tu_atomic_long content_errors;
static tu_atomic_long blocks_handled;

/* A mailed block carries its size and key in its first 16 bytes, so the receiver can verify it. */
static int verify_mailed(const uint8_t *p)
{
    uint64_t size, key;
    memcpy(&size, p, 8);
    memcpy(&key, p + 8, 8);
    return size >= 16 && size <= STRESS_MAX_SIZE && tu_pattern_find_mismatch(p, 16, (size_t)size, key) == SIZE_MAX;
}

static void stress_thread(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    tu_rng r;
    tu_rng_seed(&r, SEED + id);
    for (unsigned i = 0; i < STRESS_ITERATIONS; i++) {
        uint64_t roll = tu_rng_next(&r);
        size_t size = (size_t)(roll % STRESS_MAX_SIZE) + 1;
        uint8_t *p = (uint8_t *)FastMM_GetMem(size);
        if (!p) {
            tu_atomic_increment(&content_errors);
            continue;
        }
        uint64_t key = tu_pattern_key(SEED, id, i);
        tu_pattern_fill(p, size, key);
        if (tu_pattern_find_mismatch(p, 0, size, key) != SIZE_MAX)
            tu_atomic_increment(&content_errors);
        tu_atomic_increment(&blocks_handled);
        if ((roll >> 40) % 8 == 0 && size >= 16) {
            uint64_t s = size;
            memcpy(p, &s, 8);
            memcpy(p + 8, &key, 8);
            uint8_t *old = (uint8_t *)tu_atomic_exchange(
                (void *volatile *)&mailbox[(roll >> 48) % MAILBOX_SLOTS], p);
            if (old) {
                if (!verify_mailed(old))
                    tu_atomic_increment(&content_errors);
                if (FastMM_FreeMem(old) != 0)
                    tu_atomic_increment(&content_errors);
            }
        } else if (FastMM_FreeMem(p) != 0) {
            tu_atomic_increment(&content_errors);
        }
    }
}

static void multi_thread_stress(void)
{
    SECTION("MultiThreadStress: 4 threads x 20,000 blocks of up to 70,000 bytes, cross-thread frees");
    tu_thread threads[STRESS_THREADS];
    for (size_t i = 0; i < STRESS_THREADS; i++) {
        threads[i] = tu_thread_start(stress_thread, (void *)(uintptr_t)(i + 1), 0);
        if (!CHECK(threads[i] != NULL))
            return;
    }
    if (tu_thread_join_all(threads, STRESS_THREADS, 120000) != STRESS_THREADS)
        tu_abort_stuck("watchdog: the stress threads are not done after 120 s: deadlock?");
    for (size_t i = 0; i < MAILBOX_SLOTS; i++) {
        uint8_t *p = (uint8_t *)tu_atomic_exchange((void *volatile *)&mailbox[i], NULL);
        if (p) {
            CHECK_MSG(verify_mailed(p), "mailed block %p lost its content", (void *)p);
            CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        }
    }
    CHECK_EQ_INT(blocks_handled, STRESS_THREADS * STRESS_ITERATIONS);
    CHECK_EQ_INT(content_errors, 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

int main(void)
{
    tu_init("test_fastmm5_ports");
    tu_events_install(TU_KEEP_LAST_EVENT);
    baseline_bytes = tu_allocated_bytes();
    baseline_blocks = tu_used_block_count();

    size_classes();
    usage_per_size_class();
    CHECK_EQ_INT(tu_events_total(), 0);
    double_free_73(2000, FastMM_SmallBlock);
    double_free_73(50000, FastMM_MediumBlock);
    double_free_73(600000, FastMM_LargeBlock);
    tu_events_reset();
    multi_thread_stress();
    CHECK_EQ_INT(tu_events_total(), 0);

    SECTION("nothing left allocated");
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    return test_finish();
}
