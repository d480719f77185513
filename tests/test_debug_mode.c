/*
 * test_debug_mode — debug mode's blocks, switch and settings:
 *   - FastMM5's DebugMode smoke test: sizes 1..2000 in release and in debug mode with content checks
 *     (debug blocks: exact FastMM_BlockCurrentUserBytes, alignment, checksums); 200 reallocations
 *     across small, medium and large sizes in debug mode, content kept and the user size exact; the
 *     allocated byte count back at its baseline once everything is freed;
 *   - ModeTransition (FastMM5 #85): Enter and Exit always move the counter, an Exit below zero needs a
 *     matching Enter, the counter is process-wide;
 *   - blocks allocated in one mode are freed and reallocated in the other; reallocating an ordinary
 *     block in debug mode gives a debug block with the content;
 *   - fill bytes: 0x90 after GetMem for every size 1..1025 (and some medium and large sizes), zeros
 *     after AllocMem;
 *   - header fields: allocation number, group, user size, flags 32/33 (also the status word), thread
 *     ids, tick, stack-trace entry count, previously-used-by-class, both checksums; footer size follows
 *     the depth in force;
 *   - the freed fill (0x80, with the freed-object marker in the first pointer from 16 / 8 bytes up) is
 *     in memory after a free, for small and medium blocks;
 *   - double free, reallocation of a freed block, misaligned and interior pointers: -1 / NULL, one
 *     event each, no crash, nothing changed; the event text of a debug block;
 *   - the option and stack-depth setters, NoFillPatterns and NoChecksums;
 *   - stack traces: a block allocated in a known function and freed twice names that function's module
 *     and an offset inside it on its "Allocated from:" lines.
 * Debug mode is left as it was found (counter 0); events go to the recorder only.
 */
#include "test_util.h"

#define SEED 0xDEB06ull

static size_t baseline_bytes;
/* The freed-object marker, learned from the first freed block big enough to hold it. */
static const void *freed_marker;
static int freed_marker_known;

static void enter_debug_mode(void)
{
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
}

static void exit_debug_mode(void)
{
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
}

/* Checks that nothing was reported since the last reset, naming the first event if something was. */
static void check_no_events(const char *where)
{
    const tu_event *e = tu_events_get(0);
    CHECK_MSG(tu_events_total() == 0, "%s: %ld unexpected event(s), the first %s for %p: \"%.300s\"", where,
              (long)tu_events_total(), e ? tu_event_kind_name(e->kind) : "?", e ? e->pointer : NULL,
              e ? e->text : "");
}

static int block_kind_index(size_t n)
{
    return n <= TU_MAX_SMALL_USER ? 0 : n <= TU_MAX_MEDIUM_USER ? 1 : 2;
}

/* The checks every live debug block must pass. */
static int check_live_debug_block(const void *p, size_t n, const char *where)
{
    int ok = CHECK_MSG(tu_is_debug_block(p), "%s: %p (%zu bytes) has status word %u, not a debug block", where, p, n,
                       tu_status_word(p));
    ok &= CHECK_MSG(FastMM_BlockCurrentUserBytes((void *)p) == n, "%s: current user bytes %zu, requested %zu", where,
                    FastMM_BlockCurrentUserBytes((void *)p), n);
    ok &= CHECK_MSG(FastMM_BlockMaximumUserBytes((void *)p) >= n, "%s: maximum user bytes %zu < %zu", where,
                    FastMM_BlockMaximumUserBytes((void *)p), n);
    ok &= CHECK_MSG(tu_is_aligned(p, TU_DEFAULT_ALIGNMENT), "%s: %p is not %u-aligned", where, p,
                    TU_DEFAULT_ALIGNMENT);
    ok &= CHECK_MSG(tu_debug_user_size(p) == n && tu_debug_flags(p) == TU_DEBUG_IN_USE,
                    "%s: header user size %zu flags %u", where, tu_debug_user_size(p), tu_debug_flags(p));
    ok &= CHECK_MSG(tu_debug_checksums_match(p), "%s: %p checksums: header 0x%08x expected 0x%08x, footer 0x%08x expected 0x%08x",
                    where, p, tu_debug_header_u32(p, TU_DEBUG_CHECKSUM_OFFSET), tu_debug_expected_header_checksum(p),
                    tu_debug_stored_footer_checksum(p), tu_debug_expected_footer_checksum(p));
    return ok;
}

/* ---- FastMM5 DebugMode smoke test ------------------------------------------------------------- */

static void smoke_sizes(int debug)
{
    SECTION(debug ? "smoke: sizes 1..2000 in debug mode" : "smoke: sizes 1..2000 in release mode");
    enum { COUNT = 2000 };
    static uint8_t *blocks[COUNT + 1];
    if (debug)
        enter_debug_mode();
    for (size_t n = 1; n <= COUNT; n++) {
        blocks[n] = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK_MSG(blocks[n] != NULL, "GetMem(%zu) failed", n))
            continue;
        if (debug)
            check_live_debug_block(blocks[n], n, "smoke");
        else
            CHECK_MSG(!tu_is_debug_block(blocks[n]) && FastMM_BlockMaximumUserBytes(blocks[n]) >= n,
                      "release GetMem(%zu): status %u, maximum %zu", n, tu_status_word(blocks[n]),
                      FastMM_BlockMaximumUserBytes(blocks[n]));
        tu_pattern_fill(blocks[n], n, tu_pattern_key(SEED, n, (uint64_t)debug));
        /* Everything the maximum promises may be written: for a debug block exactly its size, since
         * its footer follows (the checksums below would see a write into it). */
        size_t maximum = FastMM_BlockMaximumUserBytes(blocks[n]);
        if (debug)
            CHECK_MSG(maximum == n, "debug GetMem(%zu): maximum %zu", n, maximum);
        if (maximum > n)
            memset(blocks[n] + n, 0x5A, maximum - n);
    }
    /* Verified only once every block is filled: overlapping blocks would show here. */
    for (size_t n = 1; n <= COUNT; n++) {
        if (!blocks[n])
            continue;
        CHECK_PATTERN(blocks[n], n, tu_pattern_key(SEED, n, (uint64_t)debug));
        if (debug)
            CHECK_MSG(tu_debug_checksums_match(blocks[n]), "%zu-byte block: checksums after filling it", n);
    }
    for (size_t n = 1; n <= COUNT; n++) {
        if (blocks[n])
            CHECK_EQ_INT(FastMM_FreeMem(blocks[n]), 0);
        blocks[n] = NULL;
    }

    /* GetMem(0) gives an empty debug block. */
    if (debug) {
        void *z = FastMM_GetMem(0);
        if (CHECK(z != NULL)) {
            check_live_debug_block(z, 0, "GetMem(0)");
            CHECK_EQ_INT(FastMM_FreeMem(z), 0);
        }
        exit_debug_mode();
    }
    check_no_events("smoke sizes");
    tu_events_reset();
}

static void smoke_reallocs(void)
{
    SECTION("smoke: 200 reallocations across sizes and kinds in debug mode");
    enter_debug_mode();
    tu_rng rng;
    tu_rng_seed(&rng, SEED + 1);
    size_t n = 100;
    uint64_t key = tu_pattern_key(SEED, 1000, 0);
    uint8_t *p = (uint8_t *)FastMM_GetMem(n);
    if (!CHECK(p != NULL)) {
        exit_debug_mode();
        return;
    }
    tu_pattern_fill(p, n, key);
    unsigned transitions[3][3] = {{0}};
    /* The first ten steps go through all nine kind-to-kind transitions; the rest are random. */
    static const size_t fixed[] = {50, 2000, 5000, 90000, 700000, 900000, 30, 600000, 10000, 10};
    for (unsigned i = 0; i < 200; i++) {
        size_t m;
        if (i < sizeof fixed / sizeof fixed[0]) {
            m = fixed[i];
        } else {
            switch (tu_rng_below(&rng, 6)) {
            case 0: m = tu_rng_log_range(&rng, 1, TU_MAX_SMALL_USER); break;
            case 1: m = tu_rng_range(&rng, TU_MIN_MEDIUM_USER, TU_MAX_MEDIUM_USER); break;
            case 2: m = tu_rng_range(&rng, TU_MIN_LARGE_USER, 1200000); break;
            case 3: m = tu_rng_log_range(&rng, 1, 1200000); break;
            case 4: m = n + tu_rng_range(&rng, 0, 40); break;     /* slight growth: often in place */
            default: m = n - tu_rng_range(&rng, 0, n / 8); break; /* slight shrink */
            }
        }
        if (i == 77)
            m = 0;
        if (i == 78)
            m = TU_MAX_SMALL_USER;
        if (i == 79)
            m = TU_MIN_MEDIUM_USER;
        if (i == 80)
            m = TU_MAX_MEDIUM_USER;
        if (i == 81)
            m = TU_MIN_LARGE_USER;
        uint8_t *q = (uint8_t *)FastMM_ReallocMem(p, m);
        if (!CHECK_MSG(q != NULL, "realloc %u: %zu -> %zu bytes failed", i, n, m))
            continue;
        transitions[block_kind_index(n)][block_kind_index(m)]++;
        char where[64];
        snprintf(where, sizeof where, "realloc %u (%zu -> %zu)", i, n, m);
        check_live_debug_block(q, m, where);
        CHECK_PATTERN(q, n < m ? n : m, key);
        key = tu_pattern_key(SEED, 1000, i + 1);
        tu_pattern_fill(q, m, key);
        p = q;
        n = m;
    }
    CHECK_PATTERN(p, n, key);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    unsigned covered = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            covered += transitions[a][b] != 0;
    tu_info("%u of the 9 kind-to-kind transitions (small/medium/large) were exercised", covered);
    CHECK(covered == 9);
    exit_debug_mode();
    check_no_events("smoke reallocs");
    tu_events_reset();
}

static void byte_balance(const char *when)
{
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    size_t now = tu_allocated_bytes();
    CHECK_MSG(now == baseline_bytes, "%s: %zu bytes allocated, %zu at the start", when, now, baseline_bytes);
}

/* ---- ModeTransition (#85) --------------------------------------------------------------------- */

static void enter_on_other_thread(void *arg)
{
    *(int *)arg = FastMM_EnterDebugMode();
}

static void mode_transition(void)
{
    SECTION("ModeTransition: the counter always moves, calls must balance");
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1); /* 1 */
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1); /* 2 */
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 1);  /* 1 */
    CHECK_EQ_INT(FastMM_DebugModeActive(), 1);
    void *d = FastMM_GetMem(24);
    CHECK_MSG(d && tu_is_debug_block(d), "a block allocated at counter 1 is not a debug block");
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0); /* 0 */
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    void *r = FastMM_GetMem(24);
    CHECK_MSG(r && !tu_is_debug_block(r), "a block allocated at counter 0 is a debug block");

    /* An Exit below zero is allowed and counted: the next Enter only brings the counter back to 0. */
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0); /* -1 */
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    void *below = FastMM_GetMem(24);
    CHECK_MSG(below && !tu_is_debug_block(below), "a block allocated at counter -1 is a debug block");
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 0); /* 0 */
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1); /* 1 */
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);  /* 0 */

    /* Deeper nesting, and several Exits below zero. */
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 1);
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 0); /* -3 */
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(FastMM_EnterDebugMode(), 0); /* back to 0 */
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);

    /* The counter belongs to the process, not to a thread. */
    int code = -1;
    tu_thread h = tu_thread_start(enter_on_other_thread, &code, 0);
    if (CHECK(h != NULL)) {
        CHECK(tu_thread_join(h, 60000));
        CHECK_EQ_INT(code, 1);
        CHECK_EQ_INT(FastMM_DebugModeActive(), 1);
        void *t = FastMM_GetMem(24);
        CHECK_MSG(t && tu_is_debug_block(t), "Enter on another thread did not make this thread's blocks debug blocks");
        CHECK_EQ_INT(FastMM_FreeMem(t), 0);
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    }

    CHECK_EQ_INT(FastMM_FreeMem(d), 0);
    CHECK_EQ_INT(FastMM_FreeMem(r), 0);
    CHECK_EQ_INT(FastMM_FreeMem(below), 0);
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    /* Whether an unbalanced Exit is also reported is not specified: forget any event. */
    tu_events_reset();
}

/* ---- blocks that cross modes ------------------------------------------------------------------ */

static void cross_mode(void)
{
    SECTION("cross-mode free and realloc");
    static const size_t sizes[] = {1, 10, 100, 1000, 2622, 2623, 5000, 300000, 558904, 558905, 700000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        uint64_t key = tu_pattern_key(SEED, 2000 + i, 0);

        /* Release block freed in debug mode. */
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (CHECK(p != NULL)) {
            tu_pattern_fill(p, n, key);
            enter_debug_mode();
            CHECK_MSG(FastMM_FreeMem(p) == 0, "a %zu-byte release block freed in debug mode", n);
            exit_debug_mode();
        }

        /* Debug block freed in release mode. */
        enter_debug_mode();
        p = (uint8_t *)FastMM_GetMem(n);
        exit_debug_mode();
        if (CHECK(p != NULL)) {
            check_live_debug_block(p, n, "debug block before a release-mode free");
            tu_pattern_fill(p, n, key);
            CHECK_MSG(FastMM_FreeMem(p) == 0, "a %zu-byte debug block freed in release mode", n);
        }

        /* Release block reallocated in debug mode: a debug block with the content. */
        static const int percent[] = {100, 200, 50};
        for (int k = 0; k < 3; k++) {
            size_t m = n * (size_t)percent[k] / 100;
            p = (uint8_t *)FastMM_GetMem(n);
            if (!CHECK(p != NULL))
                continue;
            tu_pattern_fill(p, n, key);
            enter_debug_mode();
            uint8_t *q = (uint8_t *)FastMM_ReallocMem(p, m);
            if (CHECK_MSG(q != NULL, "release block %zu -> %zu bytes in debug mode failed", n, m)) {
                check_live_debug_block(q, m, "release block reallocated in debug mode");
                CHECK_PATTERN(q, n < m ? n : m, key);
                CHECK_EQ_INT(FastMM_FreeMem(q), 0);
            } else {
                FastMM_FreeMem(p);
            }
            exit_debug_mode();
        }

        /* Debug block reallocated in release mode: content kept, size at least the request. */
        for (int k = 0; k < 3; k++) {
            size_t m = n * (size_t)percent[k] / 100;
            enter_debug_mode();
            p = (uint8_t *)FastMM_GetMem(n);
            exit_debug_mode();
            if (!CHECK(p != NULL))
                continue;
            tu_pattern_fill(p, n, key);
            uint8_t *q = (uint8_t *)FastMM_ReallocMem(p, m);
            if (CHECK_MSG(q != NULL, "debug block %zu -> %zu bytes in release mode failed", n, m)) {
                CHECK_PATTERN(q, n < m ? n : m, key);
                CHECK(FastMM_BlockCurrentUserBytes(q) >= m);
                if (tu_is_debug_block(q))
                    check_live_debug_block(q, m, "debug block reallocated in release mode");
                CHECK_EQ_INT(FastMM_FreeMem(q), 0);
            } else {
                FastMM_FreeMem(p);
            }
        }
    }
    check_no_events("cross mode");
    tu_events_reset();
}

/* ---- fill bytes ------------------------------------------------------------------------------- */

static void fill_bytes(void)
{
    SECTION("fill bytes: 0x90 after GetMem, zeros after AllocMem");
    enter_debug_mode();
    size_t bad_sizes = 0;
    for (size_t n = 1; n <= 1025; n++) {
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        size_t bad = 0;
        int ok = tu_all_bytes_equal(p, n, TU_DEBUG_ALLOCATED_FILL, &bad);
        bad_sizes += !ok;
        CHECK_MSG(ok, "GetMem(%zu): byte %zu is 0x%02x, not 0x90", n, bad, p[bad]);
        CHECK_MSG(FastMM_BlockCurrentUserBytes(p) == n && tu_debug_checksums_match(p), "GetMem(%zu): size or checksums", n);
        /* Dirty it, so that an AllocMem that gets it back must really clear it. */
        memset(p, 0x5A, n);
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        uint8_t *z = (uint8_t *)FastMM_AllocMem(n);
        if (!CHECK(z != NULL))
            continue;
        ok = tu_all_bytes_equal(z, n, 0, &bad);
        CHECK_MSG(ok, "AllocMem(%zu): byte %zu is 0x%02x, not 0", n, bad, z[bad]);
        CHECK_MSG(tu_is_debug_block(z) && FastMM_BlockCurrentUserBytes(z) == n && tu_debug_checksums_match(z),
                  "AllocMem(%zu): not an intact debug block of that size", n);
        CHECK_EQ_INT(FastMM_FreeMem(z), 0);
    }
    tu_info("%zu of sizes 1..1025 had a wrong allocated fill", bad_sizes);

    static const size_t bigger[] = {2622, 2623, 5000, 65536, 100000, 558904, 558905, 600000, 2000000};
    for (size_t i = 0; i < sizeof bigger / sizeof bigger[0]; i++) {
        size_t n = bigger[i];
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (CHECK(p != NULL)) {
            size_t bad = 0;
            int ok = tu_all_bytes_equal(p, n, TU_DEBUG_ALLOCATED_FILL, &bad);
            CHECK_MSG(ok, "GetMem(%zu): byte %zu is 0x%02x, not 0x90", n, bad, p[bad]);
            check_live_debug_block(p, n, "fill");
            memset(p, 0x5A, n);
            CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        }
        uint8_t *z = (uint8_t *)FastMM_AllocMem(n);
        if (CHECK(z != NULL)) {
            size_t bad = 0;
            int ok = tu_all_bytes_equal(z, n, 0, &bad);
            CHECK_MSG(ok, "AllocMem(%zu): byte %zu is 0x%02x, not 0", n, bad, z[bad]);
            check_live_debug_block(z, n, "AllocMem fill");
            CHECK_EQ_INT(FastMM_FreeMem(z), 0);
        }
    }
    exit_debug_mode();
    check_no_events("fill bytes");
    tu_events_reset();
}

/* ---- header fields ---------------------------------------------------------------------------- */

typedef struct other_thread_allocation {
    void *block;
    uint32_t thread_id;
} other_thread_allocation;

static void allocate_on_other_thread(void *arg)
{
    other_thread_allocation *out = (other_thread_allocation *)arg;
    out->block = FastMM_GetMem(200);
    out->thread_id = tu_thread_id();
}

static void header_fields(void)
{
    SECTION("header fields: number, group, size, flags, threads, tick, depth, checksums");
    enter_debug_mode();
    unsigned saved_group = FastMM_GetCurrentAllocationGroup();
    FastMM_SetCurrentAllocationGroup(0x5EC7A11u);
    CHECK_EQ_SIZE(FastMM_GetCurrentAllocationGroup(), 0x5EC7A11u);

    unsigned before = FastMM_GetLastAllocationNumber();
    uint32_t t0 = tu_tick32();
    uint8_t *p = (uint8_t *)FastMM_GetMem(100);
    uint32_t t1 = tu_tick32();
    if (!CHECK(p != NULL)) {
        exit_debug_mode();
        return;
    }
    CHECK_EQ_SIZE(FastMM_GetLastAllocationNumber(), before + 1);
    CHECK_EQ_SIZE(tu_debug_header_u32(p, TU_DEBUG_NUMBER_OFFSET), before + 1);
    CHECK_EQ_SIZE(tu_debug_header_u32(p, TU_DEBUG_GROUP_OFFSET), 0x5EC7A11u);
    CHECK_EQ_SIZE(tu_debug_user_size(p), 100);
    CHECK_EQ_INT(tu_debug_flags(p), TU_DEBUG_IN_USE);
    CHECK_EQ_INT(tu_status_word(p), TU_DEBUG_IN_USE);
    CHECK_EQ_SIZE(tu_debug_header_u32(p, TU_DEBUG_ALLOCATED_BY_OFFSET), tu_thread_id());
    CHECK_EQ_INT(tu_debug_entry_count(p), TU_DEBUG_DEFAULT_DEPTH);
    uint32_t tick = tu_debug_header_u32(p, TU_DEBUG_TICK_OFFSET);
    CHECK_MSG((uint32_t)(tick - t0) <= (uint32_t)(t1 - t0), "allocation tick %lu outside [%lu, %lu]",
              (unsigned long)tick, (unsigned long)t0, (unsigned long)t1);
    CHECK_MSG(tu_debug_checksums_match(p), "header checksum 0x%08x (expected 0x%08x), footer 0x%08x (expected 0x%08x)",
              tu_debug_header_u32(p, TU_DEBUG_CHECKSUM_OFFSET), tu_debug_expected_header_checksum(p),
              tu_debug_stored_footer_checksum(p), tu_debug_expected_footer_checksum(p));
    CHECK_MSG(tu_debug_trace_entry(p, 0, 0) != NULL, "no allocation stack trace");
    int free_trace_empty = 1;
    for (unsigned i = 0; i < tu_debug_entry_count(p); i++)
        free_trace_empty &= tu_debug_trace_entry(p, 1, i) == NULL;
    CHECK_MSG(free_trace_empty, "a live block has a free stack trace");

    /* One number per debug allocation, AllocMem included; none for release-mode allocations. */
    uint8_t *q = (uint8_t *)FastMM_AllocMem(3000);
    CHECK_EQ_SIZE(FastMM_GetLastAllocationNumber(), before + 2);
    if (q)
        CHECK_EQ_SIZE(tu_debug_header_u32(q, TU_DEBUG_NUMBER_OFFSET), before + 2);
    exit_debug_mode();
    void *release_block = FastMM_GetMem(100);
    CHECK_EQ_SIZE(FastMM_GetLastAllocationNumber(), before + 2);
    FastMM_FreeMem(release_block);
    enter_debug_mode();
    FastMM_FreeMem(q);

    /* The free: flags 33 (the status word too), the freeing thread, the free trace, the first pointer
     * kept as the previous class, and both checksums recomputed. */
    const void *fake_class = (const void *)(uintptr_t)0x12345670u;
    memcpy(p, &fake_class, sizeof fake_class);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    CHECK_EQ_INT(tu_debug_flags(p), TU_DEBUG_FREED);
    CHECK_EQ_INT(tu_status_word(p), TU_DEBUG_FREED);
    CHECK_EQ_SIZE(tu_debug_header_u32(p, TU_DEBUG_FREED_BY_OFFSET), tu_thread_id());
    CHECK_EQ_PTR(tu_debug_previous_class(p), fake_class);
    CHECK_EQ_SIZE(tu_debug_header_u32(p, TU_DEBUG_NUMBER_OFFSET), before + 1);
    CHECK_EQ_SIZE(tu_debug_user_size(p), 100);
    CHECK_MSG(tu_debug_trace_entry(p, 1, 0) != NULL, "no free stack trace");
    CHECK_MSG(tu_debug_checksums_match(p), "freed block: header 0x%08x (expected 0x%08x), footer 0x%08x (expected 0x%08x)",
              tu_debug_header_u32(p, TU_DEBUG_CHECKSUM_OFFSET), tu_debug_expected_header_checksum(p),
              tu_debug_stored_footer_checksum(p), tu_debug_expected_footer_checksum(p));

    /* Thread ids: allocated on a worker, freed here. */
    other_thread_allocation other = {NULL, 0};
    tu_thread h = tu_thread_start(allocate_on_other_thread, &other, 0);
    if (CHECK(h != NULL) && CHECK(tu_thread_join(h, 60000))) {
        void *w = other.block;
        uint32_t worker_id = other.thread_id;
        if (CHECK(w != NULL)) {
            CHECK_EQ_SIZE(tu_debug_header_u32(w, TU_DEBUG_ALLOCATED_BY_OFFSET), worker_id);
            CHECK(worker_id != tu_thread_id());
            CHECK_EQ_INT(FastMM_FreeMem(w), 0);
            CHECK_EQ_SIZE(tu_debug_header_u32(w, TU_DEBUG_FREED_BY_OFFSET), tu_thread_id());
            CHECK_EQ_SIZE(tu_debug_header_u32(w, TU_DEBUG_ALLOCATED_BY_OFFSET), worker_id);
        }
    }

    /* The depth in force sets the entry count and the footer of new blocks. */
    static const unsigned depths[] = {0, 1, 5, 63, 64, TU_DEBUG_DEFAULT_DEPTH};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        CHECK_EQ_INT(FastMM_SetDebugModeStackTraceEntryCount(depths[i]), 0);
        CHECK_EQ_SIZE(FastMM_GetDebugModeStackTraceEntryCount(), depths[i]);
        static const size_t sizes[] = {7, 1000, 40000};
        for (size_t k = 0; k < 3; k++) {
            uint8_t *b = (uint8_t *)FastMM_GetMem(sizes[k]);
            if (!CHECK(b != NULL))
                continue;
            CHECK_EQ_INT(tu_debug_entry_count(b), depths[i]);
            CHECK_MSG(tu_debug_checksums_match(b), "depth %u, %zu bytes: checksums", depths[i], sizes[k]);
            if (depths[i] == 0)
                CHECK_EQ_SIZE(tu_debug_stored_footer_checksum(b), 0xFFFFFFFFu);
            else
                CHECK_MSG(tu_debug_trace_entry(b, 0, 0) != NULL, "depth %u: empty allocation trace", depths[i]);
            /* The footer must fit what the block can hold. */
            CHECK_MSG(FastMM_BlockMaximumUserBytes(b) >= sizes[k], "depth %u: maximum %zu", depths[i],
                      FastMM_BlockMaximumUserBytes(b));
            CHECK_EQ_INT(FastMM_FreeMem(b), 0);
            CHECK_MSG(tu_debug_checksums_match(b) && tu_debug_flags(b) == TU_DEBUG_FREED,
                      "depth %u, %zu bytes: freed block not sealed", depths[i], sizes[k]);
        }
    }
    FastMM_SetCurrentAllocationGroup(saved_group);
    CHECK_EQ_SIZE(FastMM_GetCurrentAllocationGroup(), saved_group);
    exit_debug_mode();
    check_no_events("header fields");
    tu_events_reset();
}

/* ---- the freed fill --------------------------------------------------------------------------- */

static void freed_fill(void)
{
    SECTION("freed fill in memory after free (small and medium)");
    /* 0 stands for the largest medium debug block: a bigger one is a large block, given back to the OS
     * at once, and must never be read after its free. */
    static const size_t sizes[] = {1,  2,  3,  4,   7,   8,    9,    15,   16,   17,   23,    24,    31,    32,
                                   33, 39, 40, 41,  63,  64,   65,   100,  255,  256,  257,   1000,  2000,  2230,
                                   2231, 2622, 2623, 3000, 4096, 5000, 65536, 100000, 300000, 0};
    enter_debug_mode();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i] ? sizes[i] : tu_debug_max_medium_user(FastMM_GetDebugModeStackTraceEntryCount());
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        tu_pattern_fill(p, n, tu_pattern_key(SEED, 3000 + i, 0));
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        CHECK_MSG(tu_debug_flags(p) == TU_DEBUG_FREED, "%zu bytes: flags %u after free", n, tu_debug_flags(p));
        if (n >= TU_DEBUG_FREED_OBJECT_MINIMUM_SIZE) {
            const void *marker;
            memcpy(&marker, p, sizeof marker);
            if (!freed_marker_known) {
                freed_marker = marker;
                freed_marker_known = 1;
                uint64_t bits = (uint64_t)(uintptr_t)marker;
                CHECK_MSG(marker != NULL && bits != (uint64_t)(uintptr_t)0x8080808080808080ull &&
                              bits != (uint64_t)(uintptr_t)0x9090909090909090ull,
                          "the freed-object marker %p is not a distinct value", marker);
                tu_info("freed-object marker: %p", marker);
            }
            CHECK_MSG(marker == freed_marker, "%zu bytes: first pointer %p after free, the marker is %p", n, marker,
                      freed_marker);
        }
        if (freed_marker_known || n < TU_DEBUG_FREED_OBJECT_MINIMUM_SIZE) {
            size_t bad = tu_debug_freed_mismatch(p, n, freed_marker);
            CHECK_MSG(bad == SIZE_MAX, "%zu bytes freed: byte %zu is 0x%02x, expected 0x%02x", n, bad,
                      bad == SIZE_MAX ? 0 : p[bad], bad == SIZE_MAX ? 0 : tu_debug_freed_byte(n, bad, freed_marker));
        }
    }
    CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
    exit_debug_mode();
    check_no_events("freed fill");
    tu_events_reset();
}

/* ---- misuse ----------------------------------------------------------------------------------- */

static void check_debug_event_text(const tu_event *e, const void *p, size_t n, unsigned number, int freed)
{
    if (!CHECK_MSG(e != NULL, "no event for %p", p))
        return;
    char expect[96];
    snprintf(expect, sizeof expect, "user size %zu", n);
    CHECK_MSG(strstr(e->text, expect) != NULL, "the text lacks \"%s\": \"%.600s\"", expect, e->text);
    snprintf(expect, sizeof expect, "allocation number %u", number);
    CHECK_MSG(strstr(e->text, expect) != NULL, "the text lacks \"%s\": \"%.600s\"", expect, e->text);
    CHECK_MSG(strstr(e->text, "Allocated by thread") != NULL, "no \"Allocated by thread\": \"%.600s\"", e->text);
    CHECK_MSG(strstr(e->text, "Allocated from:") != NULL, "no \"Allocated from:\": \"%.600s\"", e->text);
    if (freed)
        CHECK_MSG(strstr(e->text, "Freed from:") != NULL, "no \"Freed from:\": \"%.600s\"", e->text);
    snprintf(expect, sizeof expect, "Dump of the first %zu bytes", n < 256 ? n : 256);
    CHECK_MSG(strstr(e->text, expect) != NULL, "the text lacks \"%s\": \"%.600s\"", expect, e->text);
    CHECK_MSG(tu_text_mentions_hex(e->text, (uintptr_t)p), "the text does not name %p", p);
}

static void double_free_and_realloc_of_freed(size_t n)
{
    enter_debug_mode();
    uint8_t *p = (uint8_t *)FastMM_GetMem(n);
    if (!CHECK(p != NULL)) {
        exit_debug_mode();
        return;
    }
    unsigned number = tu_debug_header_u32(p, TU_DEBUG_NUMBER_OFFSET);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    tu_events_reset();
    CHECK_EQ_INT(FastMM_FreeMem(p), -1);
    CHECK_EQ_INT(tu_events_total(), 1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventDoubleFree), 1);
    const tu_event *e = tu_events_find(FastMM_EventDoubleFree, p);
    check_debug_event_text(e, p, n, number, 1);
    /* Nothing changed: still a sealed freed block with its fill. */
    CHECK_EQ_INT(tu_debug_flags(p), TU_DEBUG_FREED);
    CHECK(tu_debug_checksums_match(p));
    if (freed_marker_known)
        CHECK_EQ_SIZE(tu_debug_freed_mismatch(p, n, freed_marker), SIZE_MAX);

    tu_events_reset();
    CHECK(FastMM_ReallocMem(p, n + 10) == NULL);
    CHECK_EQ_INT(tu_events_total(), 1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventReallocOfFreedBlock), 1);
    check_debug_event_text(tu_events_find(FastMM_EventReallocOfFreedBlock, p), p, n, number, 1);
    CHECK_EQ_INT(tu_debug_flags(p), TU_DEBUG_FREED);
    CHECK(tu_debug_checksums_match(p));
    if (freed_marker_known)
        CHECK_EQ_SIZE(tu_debug_freed_mismatch(p, n, freed_marker), SIZE_MAX);
    tu_events_reset();
    CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
    check_no_events("scan after double free");
    exit_debug_mode();
    tu_events_reset();
}

static void misuse(void)
{
    SECTION("double free, realloc of a freed block, misaligned and interior pointers");
    static const size_t sizes[] = {1, 100, 300, 2622, 5000, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        double_free_and_realloc_of_freed(sizes[i]);

    enter_debug_mode();
    static const size_t live_sizes[] = {100, 5000};
    for (size_t i = 0; i < 2; i++) {
        size_t n = live_sizes[i];
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        uint64_t key = tu_pattern_key(SEED, 4000 + i, 0);
        tu_pattern_fill(p, n, key);
        const size_t offsets[] = {1, 2, 4, TU_DEFAULT_ALIGNMENT / 2, TU_DEFAULT_ALIGNMENT, 2 * TU_DEFAULT_ALIGNMENT, 64};
        for (size_t k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
            uint8_t *bad = p + offsets[k];
            tu_events_reset();
            CHECK_MSG(FastMM_FreeMem(bad) == -1, "FreeMem(%p + %zu) of a %zu-byte debug block", (void *)p, offsets[k], n);
            CHECK_MSG(tu_events_total() == 1 && tu_events_count(FastMM_EventInvalidFree) == 1,
                      "FreeMem(p + %zu): %ld events, %ld InvalidFree", offsets[k], (long)tu_events_total(),
                      (long)tu_events_count(FastMM_EventInvalidFree));
            tu_events_reset();
            CHECK_MSG(FastMM_ReallocMem(bad, 10) == NULL, "ReallocMem(%p + %zu)", (void *)p, offsets[k]);
            CHECK_MSG(tu_events_total() == 1 && tu_events_count(FastMM_EventInvalidRealloc) == 1,
                      "ReallocMem(p + %zu): %ld events, %ld InvalidRealloc", offsets[k], (long)tu_events_total(),
                      (long)tu_events_count(FastMM_EventInvalidRealloc));
        }
        tu_events_reset();
        check_live_debug_block(p, n, "after misaligned frees");
        CHECK_PATTERN(p, n, key);
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }
    exit_debug_mode();
    check_no_events("misuse");
    tu_events_reset();
}

/* ---- options and depth ------------------------------------------------------------------------ */

static void options_and_depth(void)
{
    SECTION("debug options and stack-trace depth setters");
    CHECK_EQ_SIZE(FastMM_GetDebugModeOptions(), TU_DEBUG_DEFAULT_OPTIONS);
    CHECK_EQ_SIZE(FastMM_GetDebugModeStackTraceEntryCount(), TU_DEBUG_DEFAULT_DEPTH);
    for (unsigned o = 0; o < 16; o++) {
        CHECK_EQ_INT(FastMM_SetDebugModeOptions(o), 0);
        CHECK_EQ_SIZE(FastMM_GetDebugModeOptions(), o);
    }
    static const unsigned unknown[] = {16, 17, 32, 0x80000000u, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CHECK_EQ_INT(FastMM_SetDebugModeOptions(unknown[i]), -1);
        CHECK_EQ_SIZE(FastMM_GetDebugModeOptions(), 15);
    }
    CHECK_EQ_INT(FastMM_SetDebugModeOptions(TU_DEBUG_DEFAULT_OPTIONS), 0);
    CHECK_EQ_SIZE(FastMM_GetDebugModeOptions(), TU_DEBUG_DEFAULT_OPTIONS);

    for (unsigned d = 0; d <= TU_DEBUG_MAXIMUM_DEPTH; d++) {
        CHECK_EQ_INT(FastMM_SetDebugModeStackTraceEntryCount(d), 0);
        CHECK_EQ_SIZE(FastMM_GetDebugModeStackTraceEntryCount(), d);
    }
    static const unsigned too_deep[] = {65, 100, 255, 256, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof too_deep / sizeof too_deep[0]; i++) {
        CHECK_EQ_INT(FastMM_SetDebugModeStackTraceEntryCount(too_deep[i]), -1);
        CHECK_EQ_SIZE(FastMM_GetDebugModeStackTraceEntryCount(), TU_DEBUG_MAXIMUM_DEPTH);
    }
    CHECK_EQ_INT(FastMM_SetDebugModeStackTraceEntryCount(TU_DEBUG_DEFAULT_DEPTH), 0);
    /* Whether refusals are also reported is not specified. */
    tu_events_reset();

    FastMM_SetBreakOnAllocationNumber(0); /* 0: never break */

    enter_debug_mode();
    /* NoFillPatterns: neither fill, and no freed-pattern check. */
    CHECK_EQ_INT(FastMM_SetDebugModeOptions(TU_DEBUG_DEFAULT_OPTIONS | FastMM_DebugNoFillPatterns), 0);
    uint8_t *p = (uint8_t *)FastMM_GetMem(100);
    if (CHECK(p != NULL)) {
        check_live_debug_block(p, 100, "NoFillPatterns");
        memset(p, 0x11, 100);
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        CHECK_EQ_INT(tu_debug_flags(p), TU_DEBUG_FREED);
        size_t bad = 0;
        CHECK_MSG(tu_all_bytes_equal(p + 8, 92, 0x11, &bad), "NoFillPatterns: freed byte %zu is 0x%02x", bad + 8,
                  p[bad + 8]);
        p[50] = 0x22; /* a write after free that must go unnoticed */
        CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
        check_no_events("NoFillPatterns scan");
        /* Leave the block as a filled freed block would be, so that no later check depends on whether
         * fm5 remembers per block that it was freed without a fill. */
        if (freed_marker_known)
            for (size_t i = 0; i < 100; i++)
                p[i] = tu_debug_freed_byte(100, i, freed_marker);
    }

    /* NoChecksums: a corrupted header or footer goes unnoticed. */
    CHECK_EQ_INT(FastMM_SetDebugModeOptions(TU_DEBUG_DEFAULT_OPTIONS | FastMM_DebugNoChecksums), 0);
    p = (uint8_t *)FastMM_GetMem(100);
    if (CHECK(p != NULL)) {
        uint8_t *tick = tu_debug_header(p) + TU_DEBUG_TICK_OFFSET;
        *tick ^= 0xFF;
        CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
        *tick ^= 0xFF;
        p[100] ^= 0xFF;
        CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
        p[100] ^= 0xFF;
        check_no_events("NoChecksums scans");
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }
    CHECK_EQ_INT(FastMM_SetDebugModeOptions(TU_DEBUG_DEFAULT_OPTIONS), 0);
    CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
    exit_debug_mode();
    check_no_events("options");
    tu_events_reset();
}

/* ---- stack traces ----------------------------------------------------------------------------- */

/* The function whose frame must show in the allocation trace. Not static, so that its name is in the
 * symbol table; the store after the call keeps the call from becoming a tail jump. */
void *debug_test_known_allocator(size_t size) TU_NOINLINE;
void *volatile debug_test_sink;

void *debug_test_known_allocator(size_t size)
{
    void *p = FastMM_GetMem(size);
    debug_test_sink = p;
    return p;
}

/* Lower-case copy, for module names that Wine may spell in another case. */
static void lower_copy(char *dst, size_t dst_size, const char *src, size_t n)
{
    size_t i = 0;
    for (; i + 1 < dst_size && i < n && src[i]; i++)
        dst[i] = (char)((src[i] >= 'A' && src[i] <= 'Z') ? src[i] - 'A' + 'a' : src[i]);
    dst[i] = 0;
}

static void stack_trace(void)
{
    SECTION("stack trace: the allocating function's module and offset");
    char path[1024];
    tu_program_path(path, sizeof path);
    const char *name = path;
    for (size_t i = 0; path[i]; i++)
        if (path[i] == '\\' || path[i] == '/')
            name = path + i + 1;
    char module[1024 + 4];
    lower_copy(module, sizeof module, name, strlen(name));
    strcat(module, "+0x");
    uintptr_t base = tu_program_base();
    uintptr_t start = (uintptr_t)debug_test_known_allocator - base;
    tu_info("%s: function at offset 0x%llx", name, (unsigned long long)start);

    enter_debug_mode();
    CHECK_EQ_SIZE(FastMM_GetDebugModeStackTraceEntryCount(), TU_DEBUG_DEFAULT_DEPTH);
    uint8_t *p = (uint8_t *)debug_test_known_allocator(100);
    if (!CHECK(p != NULL)) {
        exit_debug_mode();
        return;
    }
    /* The raw trace in the footer holds a return address inside the function. */
    int in_raw_trace = 0;
    for (unsigned i = 0; i < tu_debug_entry_count(p); i++) {
        uintptr_t a = (uintptr_t)tu_debug_trace_entry(p, 0, i);
        in_raw_trace |= a >= base + start && a < base + start + 4096;
    }
    CHECK_MSG(in_raw_trace, "no allocation trace entry lies in debug_test_known_allocator (%p)",
              (void *)(base + start));

    unsigned number = tu_debug_header_u32(p, TU_DEBUG_NUMBER_OFFSET);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    tu_events_reset();
    CHECK_EQ_INT(FastMM_FreeMem(p), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventDoubleFree), 1);
    const tu_event *e = tu_events_find(FastMM_EventDoubleFree, p);
    check_debug_event_text(e, p, 100, number, 1);
    if (!e) {
        exit_debug_mode();
        return;
    }

    const char *from = strstr(e->text, "Allocated from:");
    const char *freed = from ? strstr(from, "Freed from:") : NULL;
    int lines = 0, in_function = 0, exe_lines = 0, symbol_ok = 1;
    if (CHECK_MSG(from && freed, "no \"Allocated from:\" ... \"Freed from:\" section: \"%.800s\"", e->text)) {
        const char *line = strchr(from, '\n');
        while (line && ++line < freed) {
            size_t n = strcspn(line, "\r\n");
            char lowered[512];
            lower_copy(lowered, sizeof lowered, line, n);
            lines++;
            /* "    0x<address>  <module>+0x<offset>  [symbol+0x..]" */
            CHECK_MSG(strncmp(line, "    0x", 6) == 0, "trace line \"%.*s\"", (int)n, line);
            const char *at = strstr(lowered, module);
            if (at) {
                exe_lines++;
                unsigned long long offset = strtoull(at + strlen(module), NULL, 16);
                if (offset >= start && offset < start + 4096) {
                    in_function++;
                    const char *bracket = memchr(line, '[', n);
                    if (bracket) {
                        const char *symbol = bracket + 1;
                        if (*symbol == '_' && strncmp(symbol, "_debug_test_known_allocator", 27) == 0)
                            symbol++;
                        if (strncmp(symbol, "debug_test_known_allocator+", 27) != 0) {
                            symbol_ok = 0;
                            CHECK_MSG(0, "the frame in debug_test_known_allocator is named \"%.*s\"",
                                      (int)(n - (size_t)(bracket - line)), bracket);
                        } else {
                            tu_info("symbol resolved: %.*s", (int)(n - (size_t)(bracket - line)), bracket);
                        }
                    }
                }
            }
            line = strchr(line, '\n');
        }
    }
    tu_info("\"Allocated from:\" has %d lines, %d in %s, %d in the function", lines, exe_lines, name, in_function);
    CHECK_MSG(in_function >= 1, "no \"Allocated from:\" line shows %s+0x%llx..+0x%llx: \"%.1500s\"", name,
              (unsigned long long)start, (unsigned long long)(start + 4096), e->text);
    CHECK(symbol_ok);
    /* The free happened here, in the test program: its trace names the program too. */
    char lowered_freed[4096];
    lower_copy(lowered_freed, sizeof lowered_freed, freed ? freed : "", freed ? strlen(freed) : 0);
    CHECK_MSG(freed && strstr(lowered_freed, module) != NULL, "\"Freed from:\" names no frame of %s", name);
    exit_debug_mode();
    tu_events_reset();
}

int main(void)
{
    tu_init("test_debug_mode");
    CHECK(tu_events_install(TU_KEEP_ALL_EVENTS));
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    baseline_bytes = tu_allocated_bytes();

    smoke_sizes(0);
    smoke_sizes(1);
    smoke_reallocs();
    SECTION("smoke: byte balance");
    byte_balance("after the smoke test");
    mode_transition();
    cross_mode();
    fill_bytes();
    header_fields();
    freed_fill();
    misuse();
    options_and_depth();
    stack_trace();

    SECTION("debug mode left as found, nothing left allocated");
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_SIZE(FastMM_GetDebugModeOptions(), TU_DEBUG_DEFAULT_OPTIONS);
    CHECK_EQ_SIZE(FastMM_GetDebugModeStackTraceEntryCount(), TU_DEBUG_DEFAULT_DEPTH);
    byte_balance("at the end");
    check_no_events("end");
    FastMM_SetEventCallback(NULL, NULL);
    return test_finish();
}
