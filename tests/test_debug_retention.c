/*
 * test_debug_retention — blocks freed in debug mode go back to ordinary recycling once debug mode
 * ends (issue 13: medium blocks freed as debug blocks never merged, and small spans emptied in debug
 * mode were never released, so their memory stayed mapped for good):
 *   - the reproducer: 18 rounds of debug mode on, ten medium blocks each a little larger than the last
 *     round's, all freed, debug mode off; the memory usage ends within two medium spans of where it
 *     started (36 MB above it before the fix), with the default options, with
 *     FastMM_SetDebugModeOptions(0) and with FastMM_OptimizeForLowMemoryUsage;
 *   - the same with small debug blocks of five size classes, dozens of spans of each (22 MB of empty
 *     spans kept before the fix): at most one small span per class is left, its feed span as in release
 *     mode, and the usage ends within the same bound plus a medium span for each of those;
 *   - debug blocks allocated in debug mode and freed after it, ordinary blocks allocated before debug
 *     mode and freed in it (kept apart by "never merge", 33 MB before the fix), and debug blocks queued
 *     on a pending-free list (their arena locked by a walk) in debug mode: the same;
 *   - after each of these the heap status, the usage summary and a walk agree with the usage, and
 *     nothing is left allocated;
 *   - a freed medium and a freed small debug block corrupted before the exit: reported once, by the
 *     exit, then quarantined (never handed out, reported again by a scan), while the intact blocks
 *     around them are recycled; restored, the next scan gives them back and their spans go too;
 *   - three threads allocate, fill, check and free small and medium blocks while the main thread turns
 *     debug mode on and off 40 times and frees debug blocks in between: every block keeps its content,
 *     nothing is reported, and the usage ends within the bound.
 * Runs on every Windows variant and on the host build (under ASan/UBSan and TSan).
 */
#include "test_util.h"

#define SEED 0xDE7E17ull
#define MIB ((size_t)1 << 20)
#define ROUNDS 18
#define BLOCKS_PER_ROUND 10
#define SMALL_CLASSES 5
#define SMALL_ROUNDS 4
#define SMALL_BYTES_PER_CLASS (4 * MIB)

static const size_t small_sizes[SMALL_CLASSES] = {8, 120, 400, 900, 1600};

static size_t usage(void)
{
    return FastMM_GetCurrentMemoryUsage();
}

/* One medium span of the strategy in force (FastMM5's sizes): what the medium manager may keep empty
 * for the next request, and what a partly used feed span holds. */
static size_t medium_span_bytes(void)
{
    switch (FastMM_GetCurrentOptimizationStrategy()) {
    case FastMM_OptimizeForSpeed: return 4 * MIB;
    case FastMM_OptimizeForLowMemoryUsage: return 3 * MIB / 2;
    default: return 3 * MIB;
    }
}

/* What one walk sees, in the views the public API offers. The walk reports each medium span before
 * the blocks in it. */
typedef struct heap_view {
    size_t used_blocks;
    size_t medium_span_bytes;
    size_t medium_spans_with_small_spans;
    size_t small_span_bytes;
    size_t small_spans;
    size_t free_medium_debug_blocks;
    const void *free_medium_debug_block;
    int span_counted;
} heap_view;

static int FM5_CALL view_block(const FastMM_WalkBlockInfo *info, void *user)
{
    heap_view *view = (heap_view *)user;
    switch (info->Kind) {
    case FastMM_MediumBlockSpan:
        view->medium_span_bytes += info->BlockSize;
        view->span_counted = 0;
        break;
    case FastMM_SmallBlockSpan:
        view->small_span_bytes += info->BlockSize;
        view->small_spans++;
        if (!view->span_counted)
            view->medium_spans_with_small_spans++;
        view->span_counted = 1;
        break;
    default:
        if (!info->IsFree)
            view->used_blocks++;
        else if (info->Kind == FastMM_MediumBlock && info->IsDebugBlock) {
            view->free_medium_debug_blocks++;
            view->free_medium_debug_block = info->Address;
        }
        break;
    }
    return 0;
}

static heap_view look(void)
{
    heap_view view;
    memset(&view, 0, sizeof view);
    CHECK_EQ_INT(FastMM_WalkBlocks(view_block, &view, 0, 0, 10000), 1);
    return view;
}

typedef struct start_point {
    size_t usage;
    size_t allocated;
    heap_view view;
} start_point;

static start_point start(void)
{
    start_point s;
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    s.usage = usage();
    s.allocated = tu_allocated_bytes();
    s.view = look();
    return s;
}

/* Everything freed: nothing allocated; the heap status, the usage summary and a walk account for
 * exactly the usage; at most `feed_spans` small spans more than at the start (a size class keeps its
 * feed span, whose unfed blocks count as in use, as in release mode); and the usage at most
 * `idle_spans` medium spans above the start (an arena keeps its feed span and one empty span for the
 * next request), plus one medium span for each small span allowed, where it may lie. */
static void check_back(const char *where, const start_point *s, size_t idle_spans, size_t feed_spans)
{
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    size_t now = usage();
    heap_view view = look();
    size_t holding = view.medium_spans_with_small_spans > s->view.medium_spans_with_small_spans
                         ? view.medium_spans_with_small_spans - s->view.medium_spans_with_small_spans
                         : 0;
    if (holding > feed_spans)
        holding = feed_spans;
    size_t bound = medium_span_bytes() * (idle_spans + holding);
    tu_info("%s: usage %zu KB above the start (bound %zu KB), %zu small spans more", where,
            now > s->usage ? (now - s->usage) >> 10 : 0, bound >> 10,
            view.small_spans > s->view.small_spans ? view.small_spans - s->view.small_spans : 0);
    CHECK_MSG(now <= s->usage + bound, "%s: usage %zu, %zu bytes above the start %zu (bound %zu)", where, now,
              now - s->usage, s->usage, bound);
    CHECK_MSG(view.small_spans <= s->view.small_spans + feed_spans,
              "%s: %zu small spans (%zu bytes), %zu at the start", where, view.small_spans, view.small_span_bytes,
              s->view.small_spans);
    FastMM_HeapStatus status;
    memset(&status, 0, sizeof status);
    CHECK_EQ_INT(FastMM_GetHeapStatus(&status, 5000), 1);
    CHECK_MSG(status.TotalAddrSpace == now, "%s: heap status TotalAddrSpace %zu, usage %zu", where,
              status.TotalAddrSpace, now);
    CHECK_MSG(status.TotalAllocated == s->allocated, "%s: heap status TotalAllocated %zu, %zu at the start", where,
              status.TotalAllocated, s->allocated);
    FastMM_UsageSummary summary;
    memset(&summary, 0, sizeof summary);
    CHECK_EQ_INT(FastMM_GetUsageSummary(&summary), 1);
    CHECK_MSG(summary.AllocatedBytes == s->allocated, "%s: usage summary AllocatedBytes %zu, %zu at the start", where,
              summary.AllocatedBytes, s->allocated);
    CHECK_MSG(summary.AllocatedBytes + summary.OverheadBytes == now, "%s: usage summary %zu + %zu, usage %zu", where,
              summary.AllocatedBytes, summary.OverheadBytes, now);
    CHECK_MSG(view.medium_span_bytes == now, "%s: the walk's medium spans hold %zu bytes, usage %zu", where,
              view.medium_span_bytes, now);
    CHECK_MSG(view.used_blocks == 0, "%s: %zu used blocks left", where, view.used_blocks);
    CHECK_MSG(view.free_medium_debug_blocks == 0, "%s: %zu free medium blocks still carry debug information", where,
              view.free_medium_debug_blocks);
}

/* ---- the reproducer ----------------------------------------------------------------------------- */

static size_t medium_size(unsigned round, unsigned i)
{
    return 4096 + (size_t)(round * BLOCKS_PER_ROUND + i) * 2048;
}

static void medium_rounds(const char *title, unsigned options, int strategy)
{
    SECTION(title);
    CHECK_EQ_INT(FastMM_SetOptimizationStrategy(strategy), 0);
    CHECK_EQ_INT(FastMM_SetDebugModeOptions(options), 0);
    start_point s = start();
    size_t peak = s.usage;
    for (unsigned round = 0; round < ROUNDS; round++) {
        CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
        void *blocks[BLOCKS_PER_ROUND];
        for (unsigned i = 0; i < BLOCKS_PER_ROUND; i++) {
            blocks[i] = FastMM_GetMem(medium_size(round, i));
            CHECK(blocks[i] != NULL && tu_is_debug_block(blocks[i]));
        }
        for (unsigned i = 0; i < BLOCKS_PER_ROUND; i++)
            CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
        if (usage() > peak)
            peak = usage();
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    }
    tu_info("peak usage %zu KB above the start", (peak - s.usage) >> 10);
    check_back(title, &s, 2, 0);
    CHECK_EQ_INT(FastMM_SetDebugModeOptions(TU_DEBUG_DEFAULT_OPTIONS), 0);
    CHECK_EQ_INT(FastMM_SetOptimizationStrategy(FastMM_Balanced), 0);
}

/* Small debug blocks of five classes, about SMALL_BYTES_PER_CLASS of each per round: dozens of spans
 * per class, which debug mode keeps when they empty (FastMM_DebugNeverFreeSmallBlockSpans). */
static size_t small_count(unsigned c)
{
    return SMALL_BYTES_PER_CLASS / (small_sizes[c] + 400);
}

static void small_rounds(const char *title, unsigned options, int strategy)
{
    SECTION(title);
    CHECK_EQ_INT(FastMM_SetOptimizationStrategy(strategy), 0);
    CHECK_EQ_INT(FastMM_SetDebugModeOptions(options), 0);
    start_point s = start();
    size_t capacity = 0;
    for (unsigned c = 0; c < SMALL_CLASSES; c++)
        capacity += small_count(c);
    void **blocks = (void **)malloc(capacity * sizeof *blocks);
    if (!CHECK(blocks != NULL))
        return;
    size_t peak = s.usage;
    for (unsigned round = 0; round < SMALL_ROUNDS; round++) {
        CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
        size_t count = 0;
        for (unsigned c = 0; c < SMALL_CLASSES; c++) {
            for (size_t i = 0; i < small_count(c); i++) {
                blocks[count] = FastMM_GetMem(small_sizes[c]);
                if (CHECK(blocks[count] != NULL && tu_is_debug_block(blocks[count])))
                    count++;
            }
        }
        for (size_t i = 0; i < count; i++)
            CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
        if (usage() > peak)
            peak = usage();
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    }
    free(blocks);
    tu_info("peak usage %zu KB above the start", (peak - s.usage) >> 10);
    check_back(title, &s, 2, SMALL_CLASSES);
    CHECK_EQ_INT(FastMM_SetDebugModeOptions(TU_DEBUG_DEFAULT_OPTIONS), 0);
    CHECK_EQ_INT(FastMM_SetOptimizationStrategy(FastMM_Balanced), 0);
}

/* ---- debug blocks freed after debug mode, and queued frees ------------------------------------- */

static void freed_after_debug_mode(void)
{
    SECTION("debug blocks allocated in debug mode, freed after it");
    start_point s = start();
    enum { SMALL_COUNT = 3000 };
    void *medium[ROUNDS * BLOCKS_PER_ROUND];
    void **small = (void **)malloc(SMALL_COUNT * sizeof *small);
    if (!CHECK(small != NULL))
        return;
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    for (unsigned i = 0; i < ROUNDS * BLOCKS_PER_ROUND; i++)
        medium[i] = FastMM_GetMem(medium_size(i / BLOCKS_PER_ROUND, i % BLOCKS_PER_ROUND));
    for (unsigned i = 0; i < SMALL_COUNT; i++)
        small[i] = FastMM_GetMem(small_sizes[i % SMALL_CLASSES]);
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    for (unsigned i = 0; i < ROUNDS * BLOCKS_PER_ROUND; i++)
        CHECK_EQ_INT(FastMM_FreeMem(medium[i]), 0);
    for (unsigned i = 0; i < SMALL_COUNT; i++)
        CHECK_EQ_INT(FastMM_FreeMem(small[i]), 0);
    free(small);
    check_back("freed after debug mode", &s, 2, SMALL_CLASSES);
}

/* Without debug information, but freed while "never merge" was in force: their free neighbours stayed
 * apart, as the debug blocks did. */
static void ordinary_blocks_freed_in_debug_mode(void)
{
    SECTION("ordinary medium blocks allocated before debug mode, freed in it");
    start_point s = start();
    for (unsigned round = 0; round < ROUNDS; round++) {
        void *blocks[BLOCKS_PER_ROUND];
        for (unsigned i = 0; i < BLOCKS_PER_ROUND; i++)
            blocks[i] = FastMM_GetMem(medium_size(round, i));
        CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
        for (unsigned i = 0; i < BLOCKS_PER_ROUND; i++)
            CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    }
    check_back("ordinary blocks freed in debug mode", &s, 2, 0);
}

static void queued_in_debug_mode(void)
{
    SECTION("debug blocks queued on a pending-free list in debug mode");
    start_point s = start();
    enum { QUEUED = 12 };
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    void *target = FastMM_GetMem(40000);
    void *queued[QUEUED];
    for (unsigned i = 0; i < QUEUED; i++)
        queued[i] = FastMM_GetMem(medium_size(i, 0));
    tu_lock_holder h;
    if (CHECK_MSG(tu_lock_holder_start(&h, target, FastMM_MediumBlock), "the walker never reached block %p", target)) {
        /* The arena is locked: every free is queued, and stays so when the walk lets go, until the
         * exit below takes the lock. */
        for (unsigned i = 0; i < QUEUED; i++)
            CHECK_EQ_INT(FastMM_FreeMem(queued[i]), 0);
        CHECK(tu_lock_holder_stop(&h));
    } else {
        tu_lock_holder_stop(&h);
        for (unsigned i = 0; i < QUEUED; i++)
            FastMM_FreeMem(queued[i]);
    }
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    /* Queued frees are frees: a walk never reports them in use. */
    CHECK_EQ_SIZE(look().used_blocks, s.view.used_blocks + 1);
    CHECK_EQ_INT(FastMM_FreeMem(target), 0);
    check_back("queued in debug mode", &s, 2, 0);
}

/* ---- corrupted freed debug blocks at the exit --------------------------------------------------- */

static int overlaps(const void *p, size_t n, const void *from, size_t size)
{
    return (const char *)p < (const char *)from + size && (const char *)from < (const char *)p + n;
}

static void corrupted_at_exit(void)
{
    SECTION("a freed medium and a freed small debug block corrupted before the exit");
    enum { MEDIUM_COUNT = 8, SMALL_COUNT = 300, TRIES = 64 };
    const size_t medium_n = 30000, small_n = 500;
    start_point s = start();
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    uint8_t *medium[MEDIUM_COUNT];
    uint8_t *small[SMALL_COUNT];
    for (unsigned i = 0; i < MEDIUM_COUNT; i++)
        medium[i] = (uint8_t *)FastMM_GetMem(medium_n);
    for (unsigned i = 0; i < SMALL_COUNT; i++)
        small[i] = (uint8_t *)FastMM_GetMem(small_n);
    for (unsigned i = 0; i < MEDIUM_COUNT; i++)
        CHECK_EQ_INT(FastMM_FreeMem(medium[i]), 0);
    for (unsigned i = 0; i < SMALL_COUNT; i++)
        CHECK_EQ_INT(FastMM_FreeMem(small[i]), 0);
    /* The first small block comes from the class's first span, fed to the end by the blocks after it:
     * once they are all freed, that span has no block in use. */
    uint8_t *medium_victim = medium[MEDIUM_COUNT / 2], *small_victim = small[0];
    medium_victim[100] ^= 0x5A;
    small_victim[50] ^= 0x21;

    tu_events_reset();
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    CHECK_MSG(tu_events_total() == 2 && tu_events_count(FastMM_EventFreedBlockModified) == 2,
              "the exit reported %ld events (%ld FreedBlockModified), expected one per corrupted block",
              (long)tu_events_total(), (long)tu_events_count(FastMM_EventFreedBlockModified));

    /* The intact medium blocks are recycled; the corrupted one stays apart, and its neighbours do not
     * merge into it. */
    heap_view view = look();
    CHECK_EQ_SIZE(view.free_medium_debug_blocks, 1);
    CHECK_EQ_PTR(view.free_medium_debug_block, medium_victim);
    /* The intact small spans are released: the corrupted block keeps its span, and the class its feed
     * span. */
    CHECK_MSG(view.small_spans <= s.view.small_spans + 2, "%zu small spans after the exit, %zu at the start",
              view.small_spans, s.view.small_spans);

    /* Neither is handed out. */
    void *medium_again[TRIES], *small_again[TRIES];
    for (unsigned i = 0; i < TRIES; i++) {
        medium_again[i] = FastMM_GetMem(medium_n);
        small_again[i] = FastMM_GetMem(small_n);
        CHECK_MSG(!overlaps(medium_again[i], medium_n, tu_debug_header(medium_victim), 64 + medium_n),
                  "the corrupted medium block was handed out as %p", medium_again[i]);
        CHECK_MSG(!overlaps(small_again[i], small_n, tu_debug_header(small_victim), 64 + small_n),
                  "the corrupted small block was handed out as %p", small_again[i]);
    }

    /* A scan still reports both, and fails. */
    tu_events_reset();
    CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 0);
    CHECK_EQ_INT(tu_events_count(FastMM_EventFreedBlockModified), 2);
    CHECK_EQ_INT(tu_events_total(), 2);

    /* Restored, they go back at the next scan, and with them their spans. */
    medium_victim[100] ^= 0x5A;
    small_victim[50] ^= 0x21;
    tu_events_reset();
    CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
    CHECK_EQ_INT(tu_events_total(), 0);
    for (unsigned i = 0; i < TRIES; i++) {
        CHECK_EQ_INT(FastMM_FreeMem(medium_again[i]), 0);
        CHECK_EQ_INT(FastMM_FreeMem(small_again[i]), 0);
    }
    /* Two classes keep a feed span each: the debug blocks' (500 bytes and the debug header and
     * footer) and, since the exit, the ordinary 500-byte blocks'. */
    check_back("corrupted at the exit, restored", &s, 2, 2);
}

/* ---- debug mode turned on and off while other threads allocate ---------------------------------- */

#define WORKERS 3
#define SLOTS 48
#define TOGGLES 40

static tu_atomic_long stop_workers;
static tu_atomic_long bad_blocks;
static tu_atomic_long worker_operations;

typedef struct slot {
    uint8_t *p;
    size_t n;
    uint64_t key;
} slot;

static void check_and_free(slot *s)
{
    if (tu_pattern_find_mismatch(s->p, 0, s->n, s->key) != SIZE_MAX || FastMM_FreeMem(s->p) != 0)
        tu_atomic_increment(&bad_blocks);
    s->p = NULL;
}

static void worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    tu_rng rng;
    tu_rng_seed(&rng, SEED + id);
    slot slots[SLOTS];
    memset(slots, 0, sizeof slots);
    uint64_t generation = 0;
    while (!tu_atomic_load(&stop_workers)) {
        slot *s = &slots[tu_rng_below(&rng, SLOTS)];
        if (s->p)
            check_and_free(s);
        s->n = tu_rng_log_range(&rng, 1, 120000);
        s->key = tu_pattern_key(SEED, id * SLOTS + (uint64_t)(s - slots), generation++);
        s->p = (uint8_t *)FastMM_GetMem(s->n);
        if (!s->p) {
            tu_atomic_increment(&bad_blocks);
            continue;
        }
        tu_pattern_fill(s->p, s->n, s->key);
        tu_atomic_increment(&worker_operations);
    }
    for (unsigned i = 0; i < SLOTS; i++)
        if (slots[i].p)
            check_and_free(&slots[i]);
}

static void toggling_while_threads_allocate(void)
{
    SECTION("three threads allocate and free while debug mode goes on and off");
    start_point s = start();
    tu_events_reset();
    tu_thread threads[WORKERS];
    for (unsigned i = 0; i < WORKERS; i++)
        threads[i] = tu_thread_start(worker, (void *)(uintptr_t)i, 0);
    tu_rng rng;
    tu_rng_seed(&rng, SEED);
    for (unsigned toggle = 0; toggle < TOGGLES; toggle++) {
        CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
        /* Debug blocks, half of them freed in debug mode, the others after it. */
        slot made[32];
        for (unsigned i = 0; i < 32; i++) {
            made[i].n = tu_rng_log_range(&rng, 1, 200000);
            made[i].key = tu_pattern_key(SEED ^ 1, i, toggle);
            made[i].p = (uint8_t *)FastMM_GetMem(made[i].n);
            if (CHECK(made[i].p != NULL))
                tu_pattern_fill(made[i].p, made[i].n, made[i].key);
        }
        for (unsigned i = 0; i < 16; i++)
            if (made[i].p)
                check_and_free(&made[i]);
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
        for (unsigned i = 16; i < 32; i++)
            if (made[i].p)
                check_and_free(&made[i]);
        tu_sleep_ms(1);
    }
    tu_atomic_store(&stop_workers, 1);
    CHECK_EQ_INT((int)tu_thread_join_all(threads, WORKERS, 120000), WORKERS);
    tu_info("%ld worker allocations during %u debug-mode toggles", (long)tu_atomic_load(&worker_operations), TOGGLES);
    CHECK_EQ_INT((int)tu_atomic_load(&bad_blocks), 0);
    CHECK_EQ_INT(tu_events_total(), 0);
    /* Each of the four arenas the threads may have used keeps a feed span and an empty medium span, and
     * a feed span per small size class. */
    check_back("after the threads", &s, 4 * 2, 4 * TU_SMALL_CLASS_COUNT);
}

int main(void)
{
    tu_init("test_debug_retention");
    tu_events_install(TU_KEEP_LAST_EVENT);
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_SIZE(FastMM_GetDebugModeOptions(), TU_DEBUG_DEFAULT_OPTIONS);

    corrupted_at_exit();
    medium_rounds("medium blocks, default options", TU_DEBUG_DEFAULT_OPTIONS, FastMM_Balanced);
    medium_rounds("medium blocks, FastMM_SetDebugModeOptions(0)", 0, FastMM_Balanced);
    medium_rounds("medium blocks, FastMM_OptimizeForLowMemoryUsage", TU_DEBUG_DEFAULT_OPTIONS,
                  FastMM_OptimizeForLowMemoryUsage);
    small_rounds("small blocks, default options", TU_DEBUG_DEFAULT_OPTIONS, FastMM_Balanced);
    small_rounds("small blocks, FastMM_SetDebugModeOptions(0)", 0, FastMM_Balanced);
    small_rounds("small blocks, FastMM_OptimizeForLowMemoryUsage", TU_DEBUG_DEFAULT_OPTIONS,
                 FastMM_OptimizeForLowMemoryUsage);
    freed_after_debug_mode();
    ordinary_blocks_freed_in_debug_mode();
    queued_in_debug_mode();
    toggling_while_threads_allocate();

    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_INT(tu_events_total(), 0);
    return test_finish();
}
