/*
 * test_multithread — 8, 16, 32 and 64 threads allocate, resize, verify and free blocks of random
 * sizes (mostly small, some medium, a few large) and hand blocks to each other through a shared
 * exchange, so that many frees and reallocations happen on a thread other than the allocating one.
 *
 * Asserted:
 *   - every block keeps its pattern until it is freed, whichever thread frees it (a block handed out
 *     twice, or a free that corrupts a neighbour, breaks another thread's pattern);
 *   - every round finishes: a watchdog fails the test if the threads are not done in time (a lost
 *     wake-up or a lock never released shows up as a hang, not as a wrong value);
 *   - after each round and FastMM_ProcessAllPendingFrees, the used-block walk and the allocated byte
 *     count are back at the baseline;
 *   - the forced pending-free path: while a helper thread holds an arena's lock (parked inside a
 *     FastMM_WalkBlocks callback on a target block), frees of that arena's blocks return at once and
 *     are queued; freeing the queue's head again fails with -1; other threads can still allocate;
 *     once the lock is released and the lists drained, the queued blocks are free and handed out
 *     again at most once each;
 *   - walks while small-block spans come and go: threads fill and empty whole spans of four size
 *     classes while the main thread walks the heap 300 times; every walk returns, the blocks keep
 *     their patterns, and in the checked variants (and host-asan) the walk's span audit would stop a
 *     walk that took a span freed while it waited for the span's lock (it did, before the walk checked
 *     again under that lock).
 */
#include "test_util.h"

#define SEED 0x7412EADull
#define EXCHANGE_SLOTS 256
#define LOCAL_SLOTS 48
#define MAGIC 0xB10C0FF1CEull
#define ROUND_TIMEOUT_MS 90000
#define TOTAL_OPERATIONS_PER_ROUND 1200000

/* Blocks that travel between threads carry their description in their first 24 bytes; the pattern
 * covers the rest. Blocks smaller than that never leave their thread. */
typedef struct block_header {
    uint64_t magic;
    uint64_t size;
    uint64_t key;
} block_header;
#define HEADER_BYTES sizeof(block_header)

static void *volatile exchange[EXCHANGE_SLOTS];
static tu_atomic_long operations_done;
static tu_atomic_long cross_thread_frees;
static tu_atomic_long reallocations;
static unsigned operations_per_thread;
/* Threads wait here until all exist, so that they really run together instead of one after another. */
static tu_signal start_gate;

typedef struct local_block {
    uint8_t *p;
    size_t size;
    uint64_t key;
} local_block;

static size_t random_size(tu_rng *r)
{
    uint64_t pick = tu_rng_below(r, 1000);
    if (pick < 850)
        return tu_rng_range(r, 0, 1024);
    if (pick < 950)
        return tu_rng_range(r, 1025, TU_MAX_SMALL_USER);
    if (pick < 997)
        return tu_rng_log_range(r, TU_MIN_MEDIUM_USER, 65536);
    return tu_rng_range(r, TU_MIN_LARGE_USER, 700000);
}

static void describe(uint8_t *p, size_t size, uint64_t key)
{
    if (size < HEADER_BYTES)
        return;
    block_header h = {MAGIC, size, key};
    memcpy(p, &h, sizeof h);
}

static void fill(local_block *b)
{
    tu_pattern_fill_range(b->p, b->size < HEADER_BYTES ? 0 : HEADER_BYTES, b->size, b->key);
    describe(b->p, b->size, b->key);
}

static int verify(const local_block *b, const char *when)
{
    if (b->size >= HEADER_BYTES) {
        block_header h;
        memcpy(&h, b->p, sizeof h);
        if (!CHECK_MSG(h.magic == MAGIC && h.size == b->size && h.key == b->key,
                       "%s: block %p header changed (magic %llx size %llu)", when, (void *)b->p,
                       (unsigned long long)h.magic, (unsigned long long)h.size))
            return 0;
    }
    size_t from = b->size < HEADER_BYTES ? 0 : HEADER_BYTES;
    size_t bad = tu_pattern_find_mismatch(b->p, from, b->size, b->key);
    return CHECK_MSG(bad == SIZE_MAX, "%s: block %p of %zu bytes, byte %zu is 0x%02x, expected 0x%02x", when,
                     (void *)b->p, b->size, bad, bad == SIZE_MAX ? 0 : b->p[bad],
                     bad == SIZE_MAX ? 0 : tu_pattern_byte(b->key, bad));
}

/* Reads the description a travelling block carries. */
static int adopt(uint8_t *p, local_block *b)
{
    block_header h;
    memcpy(&h, p, sizeof h);
    if (!CHECK_MSG(h.magic == MAGIC, "received block %p without its header (magic %llx)", (void *)p,
                   (unsigned long long)h.magic))
        return 0;
    b->p = p;
    b->size = (size_t)h.size;
    b->key = h.key;
    return 1;
}

static void free_block(tu_rng *r, local_block *b)
{
    if (tu_rng_below(r, 2) == 0)
        CHECK_MSG(FastMM_FreeMem(b->p) == 0, "FastMM_FreeMem(%p) failed", (void *)b->p);
    else
        fm5_free(b->p);
    b->p = NULL;
}

static void worker(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    tu_rng r;
    tu_rng_seed(&r, SEED ^ (id * 0x9E3779B97F4A7C15ull));
    local_block local[LOCAL_SLOTS];
    memset(local, 0, sizeof local);
    uint64_t generation = 0;
    tu_signal_wait(&start_gate, ROUND_TIMEOUT_MS);

    for (unsigned op = 0; op < operations_per_thread; op++) {
        local_block *b = &local[tu_rng_below(&r, LOCAL_SLOTS)];
        if (!b->p) {
            size_t n = random_size(&r);
            b->p = (uint8_t *)(tu_rng_below(&r, 2) ? FastMM_GetMem(n) : fm5_malloc(n));
            if (!CHECK_MSG(b->p != NULL, "thread %llu: allocation of %zu bytes failed", (unsigned long long)id, n))
                continue;
            CHECK_MSG(FastMM_BlockMaximumUserBytes(b->p) >= n, "thread %llu: block %p too small for %zu",
                      (unsigned long long)id, (void *)b->p, n);
            b->size = n;
            b->key = tu_pattern_key(SEED, id, ++generation);
            fill(b);
        } else {
            if (!verify(b, "before use")) {
                b->p = NULL; /* do not free what may not be ours */
                continue;
            }
            uint64_t action = tu_rng_below(&r, 100);
            if (action < 40) {
                free_block(&r, b);
            } else if (action < 75 && b->size >= HEADER_BYTES) {
                /* Swap with a shared slot: what comes back is another thread's block, to be resized or
                 * freed here later. */
                uint8_t *got = (uint8_t *)tu_atomic_exchange(
                    (void *volatile *)&exchange[tu_rng_below(&r, EXCHANGE_SLOTS)], b->p);
                b->p = NULL;
                if (got) {
                    local_block received;
                    if (adopt(got, &received) && verify(&received, "received")) {
                        if (tu_rng_below(&r, 2) == 0) {
                            free_block(&r, &received);
                            tu_atomic_increment(&cross_thread_frees);
                        } else {
                            *b = received;
                        }
                    }
                }
            } else {
                size_t n = random_size(&r);
                uint8_t *q = (uint8_t *)(tu_rng_below(&r, 2) ? FastMM_ReallocMem(b->p, n ? n : 1)
                                                             : fm5_realloc(b->p, n ? n : 1));
                if (!CHECK_MSG(q != NULL, "realloc of %p to %zu failed", (void *)b->p, n))
                    continue;
                if (n == 0)
                    n = 1;
                /* The first min(old, new) bytes must have moved with the block: the description
                 * (while the old block had one) and then the pattern. */
                size_t keep = b->size < n ? b->size : n;
                size_t from = 0;
                if (b->size >= HEADER_BYTES) {
                    block_header h = {MAGIC, b->size, b->key};
                    size_t head = keep < HEADER_BYTES ? keep : HEADER_BYTES;
                    CHECK_MSG(memcmp(q, &h, head) == 0, "realloc %p -> %p (%zu -> %zu): description lost",
                              (void *)b->p, (void *)q, b->size, n);
                    from = HEADER_BYTES;
                }
                if (keep > from)
                    CHECK_PATTERN_RANGE(q, from, keep, b->key);
                b->p = q;
                b->size = n;
                b->key = tu_pattern_key(SEED, id, ++generation);
                fill(b);
                tu_atomic_increment(&reallocations);
            }
        }
        tu_atomic_increment(&operations_done);
    }
    for (size_t i = 0; i < LOCAL_SLOTS; i++) {
        if (local[i].p && verify(&local[i], "at thread exit"))
            free_block(&r, &local[i]);
    }
}

static void drain_exchange(void)
{
    for (size_t i = 0; i < EXCHANGE_SLOTS; i++) {
        uint8_t *p = (uint8_t *)tu_atomic_exchange((void *volatile *)&exchange[i], NULL);
        local_block b;
        if (p && adopt(p, &b) && verify(&b, "left in the exchange"))
            CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }
}

static void round_of(unsigned threads, size_t baseline_bytes, size_t baseline_blocks)
{
    char title[96];
    snprintf(title, sizeof title, "%u threads", threads);
    SECTION(title);
    operations_per_thread = TOTAL_OPERATIONS_PER_ROUND / threads;
    operations_done = 0;
    cross_thread_frees = 0;
    tu_thread handles[64];
    unsigned started = 0;
    start_gate.raised = 0;
    for (unsigned i = 0; i < threads; i++) {
        handles[i] = tu_thread_start(worker, (void *)(uintptr_t)(threads * 1000 + i), 64 * 1024);
        if (!CHECK_MSG(handles[i] != NULL, "thread %u could not be started", i))
            break;
        started++;
    }
    unsigned long long t0 = tu_ms();
    tu_signal_raise(&start_gate);
    if (tu_thread_join_all(handles, started, ROUND_TIMEOUT_MS) != started) {
        char what[160];
        snprintf(what, sizeof what, "watchdog: %u threads not done after %u s (%ld of %u operations): deadlock?",
                 threads, ROUND_TIMEOUT_MS / 1000, (long)operations_done, started * operations_per_thread);
        tu_abort_stuck(what);
    }
    tu_info("%ld operations, %ld cross-thread frees in %llu ms", (long)operations_done, (long)cross_thread_frees,
            tu_ms() - t0);
    CHECK_EQ_INT(operations_done, (long)(started * operations_per_thread));
    CHECK(cross_thread_frees > 0);
    drain_exchange();
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

/* ---------------------------------------------------------------------------------------------- */

#define QUEUED 16

static void forced_pending_frees(size_t baseline_bytes, size_t baseline_blocks)
{
    SECTION("forced pending frees: an arena held by a walking thread");
    /* The managers' pending-free lists, below the thread caches: frees must reach them. */
    int caches = FastMM_SetThreadCaches(0);
    const size_t size = 200;
    /* The keeper keeps the span alive so that the freed blocks stay visible to the walk. */
    void *keeper = FastMM_GetMem(size);
    void *target = FastMM_GetMem(size);
    void *queued[QUEUED];
    for (size_t i = 0; i < QUEUED; i++)
        queued[i] = FastMM_GetMem(size);
    if (!CHECK(keeper && target))
        return;
    for (size_t i = 0; i < QUEUED; i++)
        if (!CHECK(queued[i] != NULL))
            return;
    tu_pattern_fill(target, size, 1);

    tu_lock_holder h;
    int held = tu_lock_holder_start(&h, target, FastMM_SmallBlock);
    if (CHECK_MSG(held, "the walker never reached block %p", target)) {
        /* Frees return at once although the arena is locked: they are queued. */
        for (size_t i = 0; i < QUEUED; i++)
            CHECK_EQ_INT(FastMM_FreeMem(queued[i]), 0);
        CHECK_EQ_INT(FastMM_FreeMem(target), 0);
        uintptr_t link_after_first;
        memcpy(&link_after_first, target, sizeof link_after_first);

        tu_events_reset();
        CHECK_EQ_INT(FastMM_FreeMem(target), -1);
        uintptr_t link_after_second;
        memcpy(&link_after_second, target, sizeof link_after_second);
        CHECK_MSG(link_after_second != (uintptr_t)target, "the rejected free made %p point at itself", target);
        CHECK_EQ_SIZE(link_after_second, link_after_first);
        int kind = 0;
        const void *pointer = NULL;
        tu_events_last(&kind, &pointer, NULL, NULL, 0);
        CHECK_MSG(tu_events_total() >= 1 && (kind == FastMM_EventDoubleFree || kind == FastMM_EventInvalidFree),
                  "second free of a queued block: %ld events, last %s", (long)tu_events_total(),
                  tu_event_kind_name(kind));
        CHECK_EQ_PTR(pointer, target);

        /* Allocation goes on meanwhile, in another arena, and never hands out a queued block. */
        void *other[8];
        for (size_t i = 0; i < 8; i++) {
            other[i] = FastMM_GetMem(size);
            CHECK(other[i] != NULL && other[i] != target);
            for (size_t j = 0; j < QUEUED; j++)
                CHECK(other[i] != queued[j]);
        }
        void *medium = FastMM_GetMem(30000);
        CHECK(medium != NULL);
        FastMM_FreeMem(medium);
        for (size_t i = 0; i < 8; i++)
            FastMM_FreeMem(other[i]);
    }
    CHECK_MSG(tu_lock_holder_stop(&h), "the walker did not finish");
    if (!held) {
        FastMM_FreeMem(keeper);
        FastMM_FreeMem(target);
        for (size_t i = 0; i < QUEUED; i++)
            FastMM_FreeMem(queued[i]);
        FastMM_SetThreadCaches(caches);
        return;
    }

    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    tu_walk w;
    tu_walk_take(&w, FastMM_SmallBlock, 0);
    /* Free means: walked as a free block, or gone with its span (then it must not come back twice). */
    const FastMM_WalkBlockInfo *info = tu_walk_find(&w, target);
    CHECK_MSG(info == NULL || info->IsFree, "after draining, %p is still in use", target);
    int target_walked_free = info != NULL;
    for (size_t i = 0; i < QUEUED; i++) {
        info = tu_walk_find(&w, queued[i]);
        CHECK_MSG(info == NULL || info->IsFree, "after draining, queued block %p is still in use", queued[i]);
    }
    tu_walk_free(&w);

    /* The drained blocks are handed out again, each at most once. */
    enum { AGAIN = 400 };
    void *again[AGAIN];
    size_t n = 0;
    for (; n < AGAIN; n++) {
        again[n] = FastMM_GetMem(size);
        if (!CHECK(again[n] != NULL))
            break;
    }
    int target_seen = 0;
    for (size_t i = 0; i < n; i++)
        target_seen += again[i] == target;
    CHECK_MSG(target_seen <= 1, "%p handed out %d times", target, target_seen);
    CHECK_MSG(target_walked_free || target_seen == 1, "after draining, %p is neither walked as free nor reused",
              target);
    tu_info("the drained target block was %s", target_seen ? "handed out again" : "not reused");
    CHECK_EQ_SIZE(tu_count_duplicates(again, n), 0);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(FastMM_FreeMem(again[i]), 0);
    CHECK_EQ_INT(FastMM_FreeMem(keeper), 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    FastMM_SetThreadCaches(caches);
}

/* Frees of medium and large blocks queue the same way while their arena is walked. */
static void forced_pending_frees_other_kinds(size_t baseline_bytes)
{
    static const struct {
        size_t size;
        unsigned kind;
    } cases[] = {{40000, FastMM_MediumBlock}, {900000, FastMM_LargeBlock}};
    for (size_t c = 0; c < 2; c++) {
        char title[96];
        snprintf(title, sizeof title, "forced pending frees: %s blocks", tu_kind_name(cases[c].kind));
        SECTION(title);
        void *keeper = FastMM_GetMem(cases[c].size);
        void *target = FastMM_GetMem(cases[c].size);
        void *queued = FastMM_GetMem(cases[c].size);
        if (!CHECK(keeper && target && queued))
            return;
        tu_lock_holder h;
        int held = tu_lock_holder_start(&h, target, cases[c].kind);
        if (CHECK_MSG(held, "the walker never reached block %p", target)) {
            CHECK_EQ_INT(FastMM_FreeMem(queued), 0);
            CHECK_EQ_INT(FastMM_FreeMem(target), 0);
            CHECK_EQ_INT(FastMM_FreeMem(target), -1);
            void *small = FastMM_GetMem(100);
            CHECK(small != NULL);
            FastMM_FreeMem(small);
        }
        CHECK(tu_lock_holder_stop(&h));
        if (!held) {
            FastMM_FreeMem(target);
            FastMM_FreeMem(queued);
        }
        CHECK_EQ_INT(FastMM_FreeMem(keeper), 0);
        CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
        CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    }
}

/* ---- walks while spans come and go --------------------------------------------------------------- */

static tu_atomic_long churn_stop;
static tu_atomic_long churn_rounds;
static tu_atomic_long churn_bad_patterns;

static void span_churn(void *arg)
{
    enum { BLOCKS = 2500 };
    static const size_t sizes[] = {24, 200, 900, 2400};
    size_t size = sizes[(uintptr_t)arg % 4];
    void **blocks = calloc(BLOCKS, sizeof *blocks);
    if (!blocks)
        return;
    for (uint64_t round = 0; !tu_atomic_load(&churn_stop); round++) {
        for (int i = 0; i < BLOCKS; i++) {
            blocks[i] = FastMM_GetMem(size);
            if (blocks[i])
                tu_pattern_fill(blocks[i], size, tu_pattern_key(SEED, (uint64_t)i, round));
        }
        for (int i = 0; i < BLOCKS; i++) {
            if (!blocks[i])
                continue;
            if (tu_pattern_find_mismatch(blocks[i], 0, size, tu_pattern_key(SEED, (uint64_t)i, round)) != SIZE_MAX)
                tu_atomic_increment(&churn_bad_patterns);
            FastMM_FreeMem(blocks[i]);
        }
        tu_atomic_increment(&churn_rounds);
    }
    free(blocks);
}

static int FM5_CALL count_walked(const FastMM_WalkBlockInfo *info, void *user)
{
    (void)info;
    ++*(size_t *)user;
    return 0;
}

static void walks_while_spans_churn(size_t baseline_bytes)
{
    SECTION("walks while small-block spans are created and freed");
    enum { THREADS = 4, WALKS = 300 };
    tu_atomic_store(&churn_stop, 0);
    tu_thread handles[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        handles[i] = tu_thread_start(span_churn, (void *)(uintptr_t)i, 64 * 1024);
    size_t walked = 0;
    for (int w = 0; w < WALKS; w++) {
        if (w % 2) {
            FastMM_UsageSummary summary;
            FastMM_GetUsageSummary(&summary);
        } else {
            FastMM_WalkBlocks(count_walked, &walked, 0, 0, 1000);
        }
    }
    tu_atomic_store(&churn_stop, 1);
    CHECK_EQ_INT((int)tu_thread_join_all(handles, THREADS, ROUND_TIMEOUT_MS), THREADS);
    CHECK(walked > 0);
    CHECK_MSG(tu_atomic_load(&churn_rounds) > 0, "no churn round finished during %d walks", WALKS);
    CHECK_EQ_INT((int)tu_atomic_load(&churn_bad_patterns), 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
}

int main(void)
{
    tu_init("test_multithread");
    tu_events_install(TU_KEEP_LAST_EVENT);
    size_t baseline_bytes = tu_allocated_bytes();
    size_t baseline_blocks = tu_used_block_count();
    size_t contention_before = FastMM_SmallBlockThreadContentionCount();

    static const unsigned thread_counts[] = {8, 16, 32, 64};
    for (size_t i = 0; i < sizeof thread_counts / sizeof thread_counts[0]; i++)
        round_of(thread_counts[i], baseline_bytes, baseline_blocks);
    CHECK(reallocations > 0);
    CHECK(FastMM_SmallBlockThreadContentionCount() >= contention_before);
    CHECK_EQ_INT(tu_events_total(), 0);

    forced_pending_frees(baseline_bytes, baseline_blocks);
    forced_pending_frees_other_kinds(baseline_bytes);
    walks_while_spans_churn(baseline_bytes);
    return test_finish();
}
