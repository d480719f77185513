/*
 * test_thread_cache — the per-thread small-block caches (fm5.h, FastMM_SetThreadCaches), through the
 * public API, on both Windows builds (the NASM paths and their C twins in the DLL) and the host builds.
 *
 * Asserted:
 *   - the setting: on by default, FastMM_SetThreadCaches returns the previous setting;
 *   - a cached block is a free block to everything else (with its span kept well used: a block of a
 *     nearly empty span goes to the managers instead): FreeMem of it again fails with a double-free
 *     event, ReallocMem and the size query fail, the walk calls it free, the leak report and the
 *     allocated bytes leave it out; the next allocation of its class returns the newest cached block;
 *   - the bounds: after 6,000 frees of 12 classes in one thread, the thread holds no more than the
 *     bins' start limits allow; the smallest class's bin holds at most 128 blocks in 64-bit builds and
 *     64 in 32-bit ones, and more than half that after 300 frees; bursts of 1,000 blocks allocated
 *     then freed grow their bin until the cache holds at least half a burst (a start bin holds at
 *     most 128 blocks), within 128 KB, and the next burst takes them back; bursts in 10 classes leave
 *     the thread within its 1 MB;
 *   - a thread's exit gives its cache back, even a full one: the cache count and the bytes fall back,
 *     and the used blocks and allocated bytes are at the baseline;
 *   - 2, 8, 32 and 64 threads hand blocks to each other (every block freed by another thread than the
 *     one that allocated it goes into the freeing thread's cache): every pattern intact, no block
 *     handed out twice, the baseline back after the threads end;
 *   - no false sharing (cache_scratch's case): a thread that frees a block another thread allocated
 *     next to one it keeps, and allocates the same size, gets a block on no line of the kept block;
 *   - two threads freeing one block at the same moment: exactly one succeeds, the other gets -1 and an
 *     event, and no block is then handed out twice (the free claims the block by compare-and-swap),
 *     for a small block and a medium one;
 *   - debug mode's entry flushes the caller's cache at once and every other thread's at its next call,
 *     caches stay off during debug mode and come back after it;
 *   - the minimum-alignment change and FastMM_ProcessAllPendingFrees flush the caller's cache;
 *   - Windows: a thread killed by TerminateThread keeps its cache (bounded, counted as free, not as
 *     allocated), and the next FastMM_ProcessAllPendingFrees gives it back;
 *   - medium blocks: a block of a size the thread asked for lately is cached; it is a free block to
 *     everything else (second free, realloc, size query, walk, leak report, allocated bytes) and no
 *     neighbour freed meanwhile merges with it; the next GetMem of its size returns it, one of another
 *     size does not and gives it back to its arena first (merged, a second free of it fails); a size
 *     the thread did not ask for lately is not cached; at most 4 blocks and 512 KB a thread; a
 *     thread's exit gives them back; the handovers above include medium blocks.
 */
#include "test_util.h"

#ifdef _WIN32
#include <windows.h>
#endif

#define SEED 0x7CAC4Eull
/* The bounds of src/blocks/thread_cache.h, as fm5.h states them: a bin starts at 8 KB (at least 16
 * and at most 128 blocks, 64 on Win32), grows to 128 KB at most, and a thread holds at most 1 MB. */
#define START_BIN_BYTES 8192u
#define START_BIN_MAXIMUM_BLOCKS (sizeof(void *) == 8 ? 128u : 64u)
#define GROWN_BIN_BYTES 131072u
#define CACHE_BYTES_PER_THREAD 1048576u
/* And of medium blocks: at most 4 blocks and 512 KB. */
#define MEDIUM_CACHE_BLOCKS 4u
#define MEDIUM_CACHE_BYTES 524288u
#define JOIN_TIMEOUT_MS 120000

static size_t cache_bytes(unsigned *caches)
{
    unsigned count = 0;
    size_t bytes = FastMM_GetThreadCacheBytes(&count);
    if (caches)
        *caches = count;
    return bytes;
}

static int walked_free_of_kind(const void *p, unsigned kind)
{
    tu_walk w;
    tu_walk_take(&w, kind, 0);
    const FastMM_WalkBlockInfo *info = tu_walk_find(&w, p);
    int result = info != NULL && info->IsFree;
    tu_walk_free(&w);
    return result;
}

static int walked_free(const void *p)
{
    return walked_free_of_kind(p, FastMM_SmallBlock);
}

/* A cached block is free to every call that asks: a second free, a reallocation and the size query
 * each fail with one event (each caller then checks that the cache still holds it). */
static void refused_as_free(void *cached)
{
    tu_events_reset();
    CHECK_EQ_INT(FastMM_FreeMem(cached), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventDoubleFree), 1);
    CHECK(FastMM_ReallocMem(cached, 100) == NULL);
    CHECK_EQ_INT(tu_events_count(FastMM_EventReallocOfFreedBlock), 1);
    CHECK_EQ_SIZE(FastMM_BlockMaximumUserBytes(cached), 0);
    CHECK_EQ_INT(tu_events_count(FastMM_EventInvalidQuery), 1);
}

/* ---- the setting ---------------------------------------------------------------------------------- */

static void setting(void)
{
    SECTION("the setting");
    CHECK_EQ_INT(FastMM_GetThreadCaches(), 1);
    CHECK_EQ_INT(FastMM_SetThreadCaches(0), 1);
    CHECK_EQ_INT(FastMM_GetThreadCaches(), 0);
    /* Off: a freed block goes to the managers, so this thread holds nothing. */
    void *p = FastMM_GetMem(40);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    CHECK_EQ_INT(FastMM_SetThreadCaches(1), 0);
    CHECK_EQ_INT(FastMM_GetThreadCaches(), 1);
}

/* ---- a cached block is a free block --------------------------------------------------------------- */

/* Fewer than half a bin: with the cache emptied first, every one of them fits in it again. */
enum { OWN = 20, OWN_SIZE = 32 };

static void own_cache(size_t baseline_bytes, size_t baseline_blocks, size_t baseline_leaks)
{
    SECTION("a cached block is a free block to everything else");
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    /* Keepers of the class stay live, so that the span is not nearly empty (its blocks would go to the
     * managers, fm5.h). */
    enum { KEEPERS = 600 };
    static void *keepers[KEEPERS];
    for (int i = 0; i < KEEPERS; i++)
        keepers[i] = FastMM_GetMem(OWN_SIZE);
    size_t with_keepers_bytes = tu_allocated_bytes(), with_keepers_blocks = tu_used_block_count();
    tu_events_reset();
    size_t with_keepers_leaks = FastMM_ReportMemoryLeaks();
    CHECK_EQ_SIZE(with_keepers_blocks, baseline_blocks + KEEPERS);
    CHECK(with_keepers_bytes >= baseline_bytes + (size_t)KEEPERS * OWN_SIZE);
    CHECK_EQ_SIZE(with_keepers_leaks, baseline_leaks + KEEPERS);
    void *blocks[OWN];
    for (int i = 0; i < OWN; i++) {
        blocks[i] = FastMM_GetMem(OWN_SIZE);
        if (!CHECK(blocks[i] != NULL))
            return;
        tu_pattern_fill(blocks[i], OWN_SIZE, (uint64_t)i);
    }
    size_t before = cache_bytes(NULL);
    for (int i = 0; i < OWN; i++)
        CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
    unsigned caches = 0;
    size_t after = cache_bytes(&caches);
    CHECK_MSG(after > before, "the frees cached nothing: %zu bytes before, %zu after", before, after);
    CHECK(caches >= 1);
    CHECK(after <= CACHE_BYTES_PER_THREAD);
    void *cached = blocks[OWN - 1];
    CHECK_MSG(walked_free(cached), "the walk does not call the cached block %p free", cached);
    CHECK_EQ_SIZE(tu_used_block_count(), with_keepers_blocks);
    CHECK_EQ_SIZE(tu_allocated_bytes(), with_keepers_bytes);
    FastMM_UsageSummary summary;
    FastMM_GetUsageSummary(&summary);
    CHECK_EQ_SIZE(summary.AllocatedBytes, with_keepers_bytes);
    tu_events_reset();
    CHECK_EQ_SIZE(FastMM_ReportMemoryLeaks(), with_keepers_leaks);

    refused_as_free(cached);
    CHECK_EQ_SIZE(cache_bytes(NULL), after);

    /* The newest cached block first, then the others, all distinct. */
    void *again[OWN];
    for (int i = 0; i < OWN; i++)
        again[i] = FastMM_GetMem(OWN_SIZE);
    CHECK_EQ_PTR(again[0], cached);
    CHECK_EQ_SIZE(tu_count_duplicates(again, OWN), 0);
    for (int i = 0; i < OWN; i++)
        CHECK_EQ_INT(FastMM_FreeMem(again[i]), 0);
    for (int i = 0; i < KEEPERS; i++)
        CHECK_EQ_INT(FastMM_FreeMem(keepers[i]), 0);
}

/* ---- the bounds ----------------------------------------------------------------------------------- */

/* A bin's start holds at most max(8 KB, 16 blocks): a block of a class is at most its size plus 32. */
static size_t start_bin_bytes(size_t size)
{
    size_t sixteen = 16 * (size + 32);
    return sixteen > START_BIN_BYTES ? sixteen : START_BIN_BYTES;
}

/* `rounds` times: `count` blocks of `size` allocated, then freed in order (glibc_simple's shape). */
static void bursts(size_t size, unsigned count, unsigned rounds, void **blocks)
{
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < count; i++) {
            blocks[i] = FastMM_GetMem(size);
            if (!CHECK(blocks[i] != NULL))
                return;
            *(volatile char *)blocks[i] = (char)i;
        }
        for (unsigned i = 0; i < count; i++)
            CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
    }
}

static void bounds(void)
{
    SECTION("the bounds: a bin's start, its growth, the thread's bytes");
    enum { PER_CLASS = 500, CLASSES = 12 };
    static const size_t sizes[CLASSES] = { 1, 16, 24, 40, 64, 100, 128, 200, 256, 400, 600, 1000 };
    static void *blocks[PER_CLASS * CLASSES];
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    /* Allocated, then freed: every bin fills and trims, none empties after a trim, so none grows. */
    size_t n = 0, start_bound = 0;
    for (int c = 0; c < CLASSES; c++) {
        start_bound += start_bin_bytes(sizes[c]);
        for (int i = 0; i < PER_CLASS; i++)
            if ((blocks[n] = FastMM_GetMem(sizes[c])) != NULL)
                n++;
    }
    CHECK_EQ_SIZE(n, (size_t)PER_CLASS * CLASSES);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
    size_t bytes = cache_bytes(NULL);
    tu_info("after %zu frees of %d classes the thread caches %zu bytes (bins' start: %zu)", n, CLASSES, bytes,
            start_bound);
    CHECK(bytes > 0);
    CHECK_MSG(bytes <= start_bound, "%zu cached bytes", bytes);

    /* The most blocks a bin starts with: a class of blocks so small that 8 KB would be more blocks
     * (the smallest) holds at most 128 in 64-bit builds and 64 in 32-bit ones. Its bin filled once (a
     * bin never filled takes no free of a block whose lines a live block shares), then 300 frees: the
     * bin fills, trims half and takes the rest, so it ends between half its limit and its limit. The
     * keepers keep the spans well used (a block of a nearly empty span is not cached). */
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    enum { SMALLEST_KEEPERS = 2000, SMALLEST_FREES = 300 };
    static void *smallest_keepers[SMALLEST_KEEPERS];
    for (int i = 0; i < SMALLEST_KEEPERS; i++)
        CHECK((smallest_keepers[i] = FastMM_GetMem(1)) != NULL);
    size_t smallest_block = FastMM_BlockMaximumUserBytes(smallest_keepers[0]) + TU_SMALL_HEADER;
    for (int i = 0; i < SMALLEST_FREES; i++)
        blocks[i] = FastMM_GetMem(1);
    for (int i = 0; i < SMALLEST_FREES; i++)
        CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
    size_t smallest_cached = cache_bytes(NULL) / smallest_block;
    tu_info("after %d frees of %zu-byte blocks the thread caches %zu of them", SMALLEST_FREES, smallest_block,
            smallest_cached);
    CHECK_MSG(smallest_cached > START_BIN_MAXIMUM_BLOCKS / 2 && smallest_cached <= START_BIN_MAXIMUM_BLOCKS,
              "%zu blocks cached, limit %zu", smallest_cached, (size_t)START_BIN_MAXIMUM_BLOCKS);
    for (int i = 0; i < SMALLEST_KEEPERS; i++)
        CHECK_EQ_INT(FastMM_FreeMem(smallest_keepers[i]), 0);

    /* Bursts larger than a bin grow it until one holds the burst: 1,000 blocks of 32 bytes (a bin of
     * the class starts at 128 blocks, 6 KB, in 64-bit builds), with keepers so that the spans stay
     * well used. */
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    enum { KEEPERS = 2000, BURST = 1000, BURST_SIZE = 32 };
    static void *keepers[KEEPERS];
    for (int i = 0; i < KEEPERS; i++)
        keepers[i] = FastMM_GetMem(BURST_SIZE);
    bursts(BURST_SIZE, BURST, 12, blocks);
    bytes = cache_bytes(NULL);
    tu_info("after bursts of %d blocks of %d bytes the thread caches %zu bytes", BURST, BURST_SIZE, bytes);
    CHECK_MSG(bytes >= (size_t)BURST * BURST_SIZE / 2, "the bin did not grow: %zu cached bytes", bytes);
    CHECK_MSG(bytes <= GROWN_BIN_BYTES, "%zu cached bytes", bytes);
    /* The burst's blocks come back from the cache: the same addresses, none twice. */
    void *first[BURST];
    for (int i = 0; i < BURST; i++)
        first[i] = FastMM_GetMem(BURST_SIZE);
    CHECK_EQ_SIZE(tu_count_duplicates(first, BURST), 0);
    CHECK_MSG(cache_bytes(NULL) < bytes / 4, "%zu bytes still cached", cache_bytes(NULL));
    for (int i = 0; i < BURST; i++)
        CHECK_EQ_INT(FastMM_FreeMem(first[i]), 0);
    for (int i = 0; i < KEEPERS; i++)
        CHECK_EQ_INT(FastMM_FreeMem(keepers[i]), 0);

    /* Bursts of 10 classes that would each grow to 128 KB: the thread stays within its bytes. */
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    static const size_t big[10] = { 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1500 };
    for (int round = 0; round < 6; round++)
        for (int c = 0; c < 10; c++)
            bursts(big[c], (unsigned)(GROWN_BIN_BYTES / big[c]), 1, blocks);
    bytes = cache_bytes(NULL);
    tu_info("after bursts of 10 classes the thread caches %zu bytes", bytes);
    CHECK_MSG(bytes <= CACHE_BYTES_PER_THREAD, "%zu cached bytes", bytes);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
}

/* ---- thread exit ---------------------------------------------------------------------------------- */

typedef struct filler {
    size_t cached_before_exit;
    int failures;
} filler;

static void fill_and_exit(void *argument)
{
    filler *f = argument;
    enum { BLOCKS = 3000 };
    static void *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++)
        blocks[i] = FastMM_GetMem(1 + (size_t)(i % 12) * 80);
    for (int i = 0; i < BLOCKS; i++)
        f->failures += blocks[i] == NULL || FastMM_FreeMem(blocks[i]) != 0;
    f->cached_before_exit = cache_bytes(NULL);
}

static void thread_exit(size_t baseline_bytes, size_t baseline_blocks)
{
    SECTION("a thread's exit gives its cache back, even a full one");
    unsigned caches_before = 0;
    size_t bytes_before = cache_bytes(&caches_before);
    filler f = { 0, 0 };
    tu_thread thread = tu_thread_start(fill_and_exit, &f, 0);
    if (!CHECK(thread != NULL))
        return;
    CHECK(tu_thread_join(thread, JOIN_TIMEOUT_MS));
    CHECK_EQ_INT(f.failures, 0);
    CHECK_MSG(f.cached_before_exit > bytes_before, "the thread cached nothing (%zu bytes, %zu before)",
              f.cached_before_exit, bytes_before);
    unsigned caches_after = 0;
    size_t bytes_after = cache_bytes(&caches_after);
    CHECK_EQ_INT(caches_after, caches_before);
    CHECK_EQ_SIZE(bytes_after, bytes_before);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

/* ---- blocks handed between threads ---------------------------------------------------------------- */

#define EXCHANGE_SLOTS 128
#define HANDOVER_MAGIC 0xCAC4EB10C0ull
static void *volatile exchange[EXCHANGE_SLOTS];
static tu_atomic_long handover_errors, handovers;
static tu_signal handover_gate;
static unsigned handover_operations;

typedef struct handed_block {
    uint64_t magic, size, key;
} handed_block;

/* Mostly small; one in 25 medium, of three sizes, so that medium blocks too go from cache to cache. */
static size_t handover_size(tu_rng *r)
{
    static const size_t medium[3] = { 3000, 9000, 20000 };
    unsigned pick = (unsigned)tu_rng_below(r, 100);
    if (pick < 4)
        return medium[pick % 3];
    return pick < 14 ? tu_rng_range(r, sizeof(handed_block), 2600) : tu_rng_range(r, sizeof(handed_block), 300);
}

static int verify_and_free(void *p)
{
    handed_block h;
    memcpy(&h, p, sizeof h);
    int bad = h.magic != HANDOVER_MAGIC ||
              tu_pattern_find_mismatch(p, sizeof h, (size_t)h.size, h.key) != SIZE_MAX;
    if (FastMM_FreeMem(p) != 0)
        bad = 1;
    return bad;
}

static void handover_worker(void *argument)
{
    unsigned index = (unsigned)(uintptr_t)argument;
    tu_rng r;
    tu_rng_seed(&r, SEED + index);
    enum { LOCAL = 32 };
    void *local[LOCAL] = { 0 };
    uint64_t keys[LOCAL] = { 0 };
    size_t sizes[LOCAL] = { 0 };
    tu_signal_wait(&handover_gate, JOIN_TIMEOUT_MS);
    for (unsigned op = 0; op < handover_operations; op++) {
        unsigned s = (unsigned)tu_rng_below(&r, LOCAL);
        if (local[s]) {
            if (tu_pattern_find_mismatch(local[s], 0, sizes[s], keys[s]) != SIZE_MAX ||
                FastMM_FreeMem(local[s]) != 0)
                tu_atomic_increment(&handover_errors);
            local[s] = NULL;
        }
        size_t size = handover_size(&r);
        uint8_t *p = FastMM_GetMem(size);
        if (!p) {
            tu_atomic_increment(&handover_errors);
            continue;
        }
        uint64_t key = tu_rng_next(&r);
        if (tu_rng_below(&r, 2)) {
            tu_pattern_fill(p, size, key);
            local[s] = p;
            keys[s] = key;
            sizes[s] = size;
            continue;
        }
        /* Handed over: another thread verifies and frees it, into its own cache. */
        handed_block h = { HANDOVER_MAGIC, size, key };
        memcpy(p, &h, sizeof h);
        tu_pattern_fill_range(p, sizeof h, size, key);
        void *old = tu_atomic_exchange(&exchange[tu_rng_below(&r, EXCHANGE_SLOTS)], (void *)p);
        if (old) {
            tu_atomic_increment(&handovers);
            if (verify_and_free(old))
                tu_atomic_increment(&handover_errors);
        }
    }
    for (unsigned s = 0; s < LOCAL; s++)
        if (local[s] && (tu_pattern_find_mismatch(local[s], 0, sizes[s], keys[s]) != SIZE_MAX ||
                         FastMM_FreeMem(local[s]) != 0))
            tu_atomic_increment(&handover_errors);
}

static void handover(unsigned threads, size_t baseline_bytes, size_t baseline_blocks)
{
    char title[80];
    snprintf(title, sizeof title, "blocks freed by other threads: %u threads", threads);
    SECTION(title);
    enum { MAXIMUM_THREADS = 64 };
    tu_thread list[MAXIMUM_THREADS];
    handover_operations = 400000 / threads;
    handover_gate.raised = 0;
    tu_atomic_store(&handover_errors, 0);
    tu_atomic_store(&handovers, 0);
    unsigned started = 0;
    for (unsigned i = 0; i < threads; i++)
        started += (list[i] = tu_thread_start(handover_worker, (void *)(uintptr_t)i, 0)) != NULL;
    CHECK_EQ_INT(started, threads);
    tu_signal_raise(&handover_gate);
    if (tu_thread_join_all(list, threads, JOIN_TIMEOUT_MS) != started)
        tu_abort_stuck("watchdog: the handover threads are not done");
    for (unsigned i = 0; i < EXCHANGE_SLOTS; i++) {
        void *p = tu_atomic_exchange(&exchange[i], NULL);
        if (p && verify_and_free(p))
            tu_atomic_increment(&handover_errors);
    }
    tu_info("%ld blocks freed by another thread than their own", (long)handovers);
    CHECK_EQ_INT(handover_errors, 0);
    CHECK(handovers > 1000);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

/* ---- two frees of one block at once --------------------------------------------------------------- */

#define RACE_ROUNDS 2000
#define RACE_TAKE 48
static size_t race_size;
static void *volatile race_block;
static tu_atomic_long race_round, race_arrived, race_freed, race_done;
static long race_results[2];
static void *race_taken[2][RACE_TAKE];

static void race_worker(void *argument)
{
    unsigned me = (unsigned)(uintptr_t)argument;
    for (long round = 1; round <= RACE_ROUNDS; round++) {
        while (tu_atomic_load(&race_round) < round)
            tu_yield();
        tu_atomic_increment(&race_arrived);
        while (tu_atomic_load(&race_arrived) < 2 * round)
            ;
        race_results[me] = FastMM_FreeMem(race_block);
        /* Both frees are over before either thread allocates (else the block could be live again, and
         * the second free a legitimate one). A block cached by both would come back to both. */
        tu_atomic_increment(&race_freed);
        while (tu_atomic_load(&race_freed) < 2 * round)
            ;
        for (int i = 0; i < RACE_TAKE; i++)
            race_taken[me][i] = FastMM_GetMem(race_size);
        tu_atomic_increment(&race_done);
        while (tu_atomic_load(&race_done) < 2 * round)
            tu_yield();
    }
}

/* With `alone`, the block is mostly the only one in use in its span (of a class nobody else uses; the
 * caches are flushed first, the caller's at once, the racing threads' as their frees begin), so that
 * the free that wins releases the span, its header with it, while the other free is still on its way:
 * that one must read nothing of the span before its claim fails. */
static void double_free_race(size_t size, int alone)
{
    SECTION(alone ? "two threads free the only block of its span at the same moment"
                  : "two threads free one block at the same moment");
    race_size = size;
    tu_events_reset();
    tu_atomic_store(&race_round, 0);
    tu_atomic_store(&race_arrived, 0);
    tu_atomic_store(&race_freed, 0);
    tu_atomic_store(&race_done, 0);
    tu_thread threads[2];
    threads[0] = tu_thread_start(race_worker, (void *)(uintptr_t)0, 0);
    threads[1] = tu_thread_start(race_worker, (void *)(uintptr_t)1, 0);
    if (!CHECK(threads[0] && threads[1]))
        tu_abort_stuck("no race threads");
    long wrong_results = 0, duplicates = 0;
    for (long round = 1; round <= RACE_ROUNDS; round++) {
        race_block = FastMM_GetMem(size);
        if (alone)
            FastMM_ProcessAllPendingFrees();
        tu_atomic_store(&race_round, round);
        while (tu_atomic_load(&race_done) < 2 * round)
            tu_yield();
        if ((race_results[0] == 0) + (race_results[1] == 0) != 1 && wrong_results < 3)
            tu_info("round %ld: results %ld %ld, block %p", round, race_results[0], race_results[1], race_block);
        wrong_results += (race_results[0] == 0) + (race_results[1] == 0) != 1;
        void *all[2 * RACE_TAKE];
        memcpy(all, race_taken[0], sizeof race_taken[0]);
        memcpy(all + RACE_TAKE, race_taken[1], sizeof race_taken[1]);
        duplicates += (long)tu_count_duplicates(all, 2 * RACE_TAKE);
        for (int i = 0; i < 2 * RACE_TAKE; i++)
            FastMM_FreeMem(all[i]);
    }
    CHECK(tu_thread_join_all(threads, 2, JOIN_TIMEOUT_MS) == 2);
    CHECK_EQ_INT(wrong_results, 0);
    CHECK_EQ_INT(duplicates, 0);
    CHECK_EQ_INT(tu_events_count(FastMM_EventDoubleFree) + tu_events_count(FastMM_EventInvalidFree), RACE_ROUNDS);
}

/* ---- no false sharing ----------------------------------------------------------------------------- */

/* cache_scratch's case: a thread frees a block that another thread allocated next to one it keeps
 * writing, then allocates the same size. */
static void *volatile sharing_freed;
static void *volatile sharing_got;

static void free_then_allocate(void *argument)
{
    (void)argument;
    FastMM_FreeMem(sharing_freed);
    sharing_got = FastMM_GetMem(1);
}

static int lines_overlap(const void *a, size_t a_size, const void *b, size_t b_size)
{
    uintptr_t a_first = (uintptr_t)a / 64, a_last = ((uintptr_t)a + a_size - 1) / 64;
    uintptr_t b_first = (uintptr_t)b / 64, b_last = ((uintptr_t)b + b_size - 1) / 64;
    return a_first <= b_last && b_first <= a_last;
}

static void no_false_sharing(void)
{
    SECTION("a block freed by another thread is not handed out on a line a live block shares");
    enum { BLOCKS = 64, ROUNDS = 20 };
    unsigned shared = 0, rounds = 0;
    for (int round = 0; round < ROUNDS; round++) {
        void *blocks[BLOCKS];
        for (int i = 0; i < BLOCKS; i++)
            blocks[i] = FastMM_GetMem(1);
        /* Two of them on one line: the first goes to the other thread, the second stays in use. */
        int k = -1;
        for (int i = 0; i < BLOCKS && k < 0; i++)
            for (int j = 0; j < BLOCKS && k < 0; j++)
                if (i != j && lines_overlap(blocks[i], 1, blocks[j], 1))
                    k = i, sharing_freed = blocks[i], blocks[i] = blocks[j], blocks[j] = NULL;
        if (k < 0) {
            tu_info("no two blocks on one line in round %d", round);
            for (int i = 0; i < BLOCKS; i++)
                FastMM_FreeMem(blocks[i]);
            continue;
        }
        void *kept = blocks[k];
        tu_thread thread = tu_thread_start(free_then_allocate, NULL, 0);
        CHECK(thread != NULL && tu_thread_join(thread, JOIN_TIMEOUT_MS));
        rounds++;
        size_t got_size = FastMM_BlockMaximumUserBytes(sharing_got);
        if (lines_overlap(sharing_got, got_size, kept, FastMM_BlockMaximumUserBytes(kept)) && shared < 3)
            tu_info("round %d: freed %p kept %p got %p", round, sharing_freed, kept, sharing_got);
        shared += lines_overlap(sharing_got, got_size, kept, FastMM_BlockMaximumUserBytes(kept));
        FastMM_FreeMem(sharing_got);
        for (int i = 0; i < BLOCKS; i++)
            if (blocks[i])
                FastMM_FreeMem(blocks[i]);
    }
    CHECK(rounds > 0);
    CHECK_MSG(shared == 0, "%u of %u rounds handed out a block on the kept block's line", shared, rounds);
}

/* ---- flushes -------------------------------------------------------------------------------------- */

/* A worker that fills its cache, or frees one block it is given, when told to: this thread measures
 * the caches in between, with no small call of its own that would fill its own cache. */
enum { WORKER_IDLE, WORKER_FILL, WORKER_FREE_GIVEN, WORKER_QUIT };
static tu_atomic_long worker_command, worker_acknowledged;
static void *volatile worker_given;

static void command_worker(void *argument)
{
    (void)argument;
    for (;;) {
        long command = tu_atomic_load(&worker_command);
        if (command == WORKER_IDLE) {
            tu_sleep_ms(1);
            continue;
        }
        if (command == WORKER_QUIT)
            return;
        if (command == WORKER_FILL) {
            void *blocks[200];
            for (int i = 0; i < 200; i++)
                blocks[i] = FastMM_GetMem(16 + (size_t)(i % 4) * 48);
            for (int i = 0; i < 200; i++)
                FastMM_FreeMem(blocks[i]);
        } else {
            FastMM_FreeMem(worker_given);
        }
        tu_atomic_store(&worker_command, WORKER_IDLE);
        tu_atomic_increment(&worker_acknowledged);
    }
}

static void order(long command)
{
    long before = tu_atomic_load(&worker_acknowledged);
    tu_atomic_store(&worker_command, command);
    unsigned long long start = tu_ms();
    while (tu_atomic_load(&worker_acknowledged) == before) {
        if (tu_ms() - start > JOIN_TIMEOUT_MS)
            tu_abort_stuck("the command worker does not answer");
        tu_sleep_ms(1);
    }
}

/* This thread's cache gets blocks (so that the flush of its own can be seen); one block stays live for
 * the worker's next call. */
static void cache_some_keep_one(void)
{
    enum { SOME = 300 };
    static void *blocks[SOME];
    for (int i = 0; i < SOME; i++)
        blocks[i] = FastMM_GetMem(40);
    worker_given = blocks[0];
    for (int i = 1; i < SOME; i++)
        FastMM_FreeMem(blocks[i]);
}

static void flushes(size_t baseline_bytes, size_t baseline_blocks)
{
    SECTION("debug mode, the alignment change and ProcessAllPendingFrees flush the caches");
    tu_atomic_store(&worker_command, WORKER_IDLE);
    tu_thread worker = tu_thread_start(command_worker, NULL, 0);
    if (!CHECK(worker != NULL))
        return;

    /* Debug mode: the caller's cache at once, the worker's at its next call (a free), none during. */
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    order(WORKER_FILL);
    size_t worker_bytes = cache_bytes(NULL);
    CHECK(worker_bytes > 0);
    cache_some_keep_one();
    CHECK(cache_bytes(NULL) > worker_bytes);
    FastMM_EnterDebugMode();
    CHECK_EQ_SIZE(cache_bytes(NULL), worker_bytes);
    order(WORKER_FREE_GIVEN);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    order(WORKER_FILL);
    FastMM_FreeMem(FastMM_GetMem(40));
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    FastMM_ExitDebugMode();
    order(WORKER_FILL);
    CHECK(cache_bytes(NULL) > 0);

    /* The alignment change. */
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    order(WORKER_FILL);
    worker_bytes = cache_bytes(NULL);
    cache_some_keep_one();
    CHECK(cache_bytes(NULL) > worker_bytes);
    CHECK_EQ_INT(FastMM_EnterMinimumAddressAlignment(64), 0);
    CHECK_EQ_SIZE(cache_bytes(NULL), worker_bytes);
    order(WORKER_FREE_GIVEN);
    CHECK_MSG(cache_bytes(NULL) < worker_bytes, "the worker's cache was not flushed: %zu bytes, %zu before",
              cache_bytes(NULL), worker_bytes);
    CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(64), 0);

    /* FastMM_ProcessAllPendingFrees. */
    order(WORKER_FILL);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    worker_bytes = cache_bytes(NULL);
    CHECK(worker_bytes > 0);
    cache_some_keep_one();
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    order(WORKER_FREE_GIVEN);
    CHECK(cache_bytes(NULL) < worker_bytes);

    tu_atomic_store(&worker_command, WORKER_QUIT);
    CHECK(tu_thread_join(worker, JOIN_TIMEOUT_MS));
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

/* ---- medium blocks -------------------------------------------------------------------------------- */

enum { MEDIUM_SIZE = 20000, MEDIUM_OTHER_SIZE = 30000, MEDIUM_UNASKED_SIZE = 40000 };

static void medium_cache(size_t baseline_bytes, size_t baseline_blocks, size_t baseline_leaks)
{
    SECTION("medium blocks: a cached one is a free block to everything else and unmerged");
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    /* Neighbours: blocks carved one after the other from the feed touch; tries whose blocks came
     * from the bins instead are kept live until the bins have no fitting block left. The sizes are
     * then pushed out of the thread's recent requests by four others, so that freeing them below goes
     * to the manager, except for the middle block's size, asked for once more. */
    enum { TRIES = 64 };
    void *tried[TRIES][3];
    void *left = NULL, *middle = NULL, *right = NULL;
    int tries = 0;
    for (; tries < TRIES && !middle; tries++) {
        void **t = tried[tries];
        t[0] = FastMM_GetMem(MEDIUM_OTHER_SIZE);
        t[1] = FastMM_GetMem(MEDIUM_SIZE);
        t[2] = FastMM_GetMem(MEDIUM_OTHER_SIZE);
        char *m = t[1];
        size_t extent = FastMM_BlockMaximumUserBytes(m) + 8;
        int below = m + extent == (char *)t[0] || m + extent == (char *)t[2];
        int above = (char *)t[0] + FastMM_BlockMaximumUserBytes(t[0]) + 8 == m ||
                    (char *)t[2] + FastMM_BlockMaximumUserBytes(t[2]) + 8 == m;
        if (below && above) {
            left = t[0], middle = t[1], right = t[2];
            tries--;
        }
    }
    if (!CHECK_MSG(middle != NULL, "no three medium blocks side by side in %d tries", TRIES))
        return;
    void *pushers[4];
    for (int i = 0; i < 4; i++)
        pushers[i] = FastMM_GetMem(MEDIUM_UNASKED_SIZE);
    void *other = FastMM_GetMem(MEDIUM_SIZE);
    if (!CHECK(left && middle && right && other && pushers[0] && pushers[3]))
        return;
    tu_pattern_fill(left, MEDIUM_OTHER_SIZE, 1);
    tu_pattern_fill(middle, MEDIUM_SIZE, 2);
    tu_pattern_fill(right, MEDIUM_OTHER_SIZE, 3);
    size_t live_bytes = tu_allocated_bytes(), live_blocks = tu_used_block_count();
    tu_events_reset();
    size_t live_leaks = FastMM_ReportMemoryLeaks();

    CHECK_EQ_INT(FastMM_FreeMem(middle), 0);
    size_t cached = cache_bytes(NULL);
    CHECK_MSG(cached >= MEDIUM_SIZE && cached < MEDIUM_SIZE + 1024,
              "the freed medium block was not cached: %zu bytes in the cache", cached);
    CHECK_MSG(walked_free_of_kind(middle, FastMM_MediumBlock), "the walk does not call the cached block free");
    CHECK_EQ_SIZE(tu_used_block_count(), live_blocks - 1);
    CHECK(tu_allocated_bytes() < live_bytes && tu_allocated_bytes() >= live_bytes - MEDIUM_SIZE - 1024);
    tu_events_reset();
    CHECK_EQ_SIZE(FastMM_ReportMemoryLeaks(), live_leaks - 1);
    refused_as_free(middle);
    CHECK_EQ_SIZE(cache_bytes(NULL), cached);

    /* Its neighbours go to the manager (their size is no recent request) and must not merge with it:
     * it stays a block of its own, free to the walk. */
    CHECK_EQ_INT(FastMM_FreeMem(left), 0);
    CHECK_EQ_INT(FastMM_FreeMem(right), 0);
    CHECK_EQ_SIZE(cache_bytes(NULL), cached);
    CHECK_MSG(walked_free_of_kind(middle, FastMM_MediumBlock), "a neighbour merged with the cached block");

    /* Its own size takes it back, with the content left as it was freed. */
    void *again = FastMM_GetMem(MEDIUM_SIZE);
    CHECK_EQ_PTR(again, middle);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    CHECK_EQ_SIZE(tu_pattern_find_mismatch(again, sizeof(void *), MEDIUM_SIZE, 2), SIZE_MAX);

    /* Another size does not take it, and gives it back to its arena before the arena is asked: merged
     * with its free neighbours, it is no block of its own any more, and freeing it again fails. */
    CHECK_EQ_INT(FastMM_FreeMem(again), 0);
    CHECK_EQ_SIZE(cache_bytes(NULL), cached);
    void *different = FastMM_GetMem(MEDIUM_SIZE + 4096);
    CHECK(different != middle);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    tu_events_reset();
    CHECK_EQ_INT(FastMM_FreeMem(middle), -1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventDoubleFree) + tu_events_count(FastMM_EventInvalidFree), 1);

    /* A size the thread did not ask for lately is not cached. */
    void *unasked = FastMM_GetMem(MEDIUM_UNASKED_SIZE + 8192);
    for (int i = 0; i < 4; i++)
        FastMM_FreeMem(FastMM_GetMem(3000 + (size_t)i * 512));
    FastMM_ProcessAllPendingFrees();
    CHECK_EQ_INT(FastMM_FreeMem(unasked), 0);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);

    CHECK_EQ_INT(FastMM_FreeMem(different), 0);
    CHECK_EQ_INT(FastMM_FreeMem(other), 0);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(FastMM_FreeMem(pushers[i]), 0);
    for (int i = 0; i < tries; i++)
        for (int k = 0; k < 3; k++)
            CHECK_EQ_INT(FastMM_FreeMem(tried[i][k]), 0);

    SECTION("medium blocks: at most 4 and 512 KB a thread, given back by the flush");
    enum { MANY = 12 };
    static const size_t sizes[3] = { 5000, 60000, 200000 };
    for (int k = 0; k < 3; k++) {
        void *blocks[MANY];
        for (int i = 0; i < MANY; i++)
            blocks[i] = FastMM_GetMem(sizes[k]);
        for (int i = 0; i < MANY; i++)
            CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
        size_t held = cache_bytes(NULL);
        size_t bound = MEDIUM_CACHE_BLOCKS * (sizes[k] + 1024);
        if (bound > MEDIUM_CACHE_BYTES)
            bound = MEDIUM_CACHE_BYTES;
        tu_info("%d frees of %zu bytes: %zu bytes cached", MANY, sizes[k], held);
        CHECK(held >= sizes[k] && held <= bound);
        /* Served newest first or not, every cached one comes back, distinct. */
        for (int i = 0; i < MANY; i++)
            blocks[i] = FastMM_GetMem(sizes[k]);
        CHECK_EQ_SIZE(cache_bytes(NULL), 0);
        CHECK_EQ_SIZE(tu_count_duplicates(blocks, MANY), 0);
        for (int i = 0; i < MANY; i++)
            CHECK_EQ_INT(FastMM_FreeMem(blocks[i]), 0);
        CHECK(cache_bytes(NULL) > 0);
        CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
        CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    }
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    tu_events_reset();
    CHECK_EQ_SIZE(FastMM_ReportMemoryLeaks(), baseline_leaks);
}

static void medium_worker(void *argument)
{
    (void)argument;
    void *p = FastMM_GetMem(MEDIUM_SIZE);
    FastMM_FreeMem(p);
}

static void medium_thread_exit(void)
{
    SECTION("medium blocks: a thread's exit gives its cached ones back");
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
    tu_thread t = tu_thread_start(medium_worker, NULL, 0);
    CHECK(t != NULL && tu_thread_join(t, JOIN_TIMEOUT_MS));
    CHECK_EQ_SIZE(cache_bytes(NULL), 0);
}

/* ---- TerminateThread ------------------------------------------------------------------------------ */

#ifdef _WIN32
enum { KILLED_BLOCKS = 600 };
static void *killed_blocks[KILLED_BLOCKS];
static tu_signal killed_ready;

static DWORD WINAPI fill_and_wait(void *argument)
{
    (void)argument;
    for (int i = 0; i < KILLED_BLOCKS; i++)
        killed_blocks[i] = FastMM_GetMem(8 + (size_t)(i % 2) * 40);
    for (int i = 0; i < KILLED_BLOCKS; i++)
        FastMM_FreeMem(killed_blocks[i]);
    FastMM_FreeMem(FastMM_GetMem(MEDIUM_SIZE));
    tu_signal_raise(&killed_ready);
    while (argument == NULL)
        Sleep(1000);
    return 0;
}

static void terminated_thread(size_t baseline_bytes, size_t baseline_blocks)
{
    SECTION("a thread killed by TerminateThread loses at most its cache, until ProcessAllPendingFrees");
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    unsigned caches_before = 0;
    CHECK_EQ_SIZE(cache_bytes(&caches_before), 0);
    killed_ready.raised = 0;
    HANDLE thread = CreateThread(NULL, 0, fill_and_wait, NULL, 0, NULL);
    if (!CHECK(thread != NULL))
        return;
    CHECK(tu_signal_wait(&killed_ready, JOIN_TIMEOUT_MS));
    CHECK(TerminateThread(thread, 3));
    CHECK(WaitForSingleObject(thread, JOIN_TIMEOUT_MS) == WAIT_OBJECT_0);
    CloseHandle(thread);
    unsigned caches = 0;
    size_t kept = cache_bytes(&caches);
    tu_info("the killed thread kept %zu bytes in its cache", kept);
    CHECK(kept > MEDIUM_SIZE && kept <= CACHE_BYTES_PER_THREAD + MEDIUM_CACHE_BYTES);
    CHECK_EQ_INT(caches, caches_before + 1);
    /* Counted as free blocks, not as allocated ones. */
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    int cached_walked_free = 0;
    for (int i = 0; i < KILLED_BLOCKS; i++)
        cached_walked_free += walked_free(killed_blocks[i]);
    CHECK(cached_walked_free > 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(cache_bytes(&caches), 0);
    CHECK_EQ_INT(caches, caches_before);
}
#endif

int main(void)
{
    tu_init("test_thread_cache");
    tu_events_install(TU_KEEP_LAST_EVENT);
    size_t baseline_bytes = tu_allocated_bytes();
    size_t baseline_blocks = tu_used_block_count();
    tu_events_reset();
    size_t baseline_leaks = FastMM_ReportMemoryLeaks();
    setting();
    own_cache(baseline_bytes, baseline_blocks, baseline_leaks);
    bounds();
    thread_exit(baseline_bytes, baseline_blocks);
    handover(2, baseline_bytes, baseline_blocks);
    handover(8, baseline_bytes, baseline_blocks);
    handover(32, baseline_bytes, baseline_blocks);
    handover(64, baseline_bytes, baseline_blocks);
    double_free_race(24, 0);
    double_free_race(1800, 1);
    double_free_race(MEDIUM_SIZE, 0);   /* cached, claimed under the lock, or queued */
    medium_cache(baseline_bytes, baseline_blocks, baseline_leaks);
    medium_thread_exit();
    no_false_sharing();
    flushes(baseline_bytes, baseline_blocks);
#ifdef _WIN32
    terminated_thread(baseline_bytes, baseline_blocks);
#endif
    return test_finish();
}
