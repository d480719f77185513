/*
 * test_bad_pointer_race — a bad pointer racing with the release of the memory it points into.
 *
 * Three churn threads allocate and free medium and large blocks, so that medium spans and large
 * regions go back to the OS all the time, and publish the address of each block they hold. Three
 * attacker threads pass interior addresses of the published blocks (invalid whatever the block's
 * state) to FastMM_FreeMem, FastMM_ReallocMem and FastMM_BlockMaximumUserBytes. Every such call must
 * fail (-1, NULL, 0), never crash, even when the address map said "fm5's" just before the region was
 * released; and no churn block may lose a byte of its content.
 * Runs on both Windows builds under Wine (the NASM fast paths and the C ones) and on the host build
 * under ASan/UBSan and TSan; through the DLL, and (test_bad_pointer_race_static) through fm5_static,
 * which also reports how many tombstones the release guard made (src/base/os.h).
 */
#include "test_util.h"

#ifdef FM5_STATIC
/* The second build of this test (test_bad_pointer_race_static) also says how often the race struck. */
#include "base/os.h"
#include "base/address_map.h"
#include "blocks/block_status.h"
#include "api/startup.h"
#endif

#define SEED 0xBADACEull
#define CHURN_THREADS 3
#define ATTACK_THREADS 3
#define CHURN_SLOTS 8
#define PUBLISHED 64
#define RUN_MS 2500

/* Each published block as its address; its size is at least MINIMUM_SIZE. */
static void *volatile published[PUBLISHED];
#define MINIMUM_SIZE 3000u
static tu_atomic_long stop;
static tu_atomic_long churn_operations, attacks, attack_failures_missed, content_errors;

/* Medium blocks from several spans' worth, and large ones, so that regions are released often. */
static size_t churn_size(tu_rng *rng)
{
    return tu_rng_below(rng, 4) == 0 ? 600000 + (size_t)tu_rng_below(rng, 1500000)
                                     : MINIMUM_SIZE + (size_t)tu_rng_below(rng, 200000);
}

static void churn(void *arg)
{
    unsigned index = (unsigned)(uintptr_t)arg;
    tu_rng rng;
    tu_rng_seed(&rng, SEED + index);
    uint8_t *blocks[CHURN_SLOTS] = { 0 };
    size_t sizes[CHURN_SLOTS] = { 0 };
    uint64_t keys[CHURN_SLOTS] = { 0 };
    uint64_t generation = 0;
    while (!tu_atomic_load(&stop)) {
        unsigned s = (unsigned)tu_rng_below(&rng, CHURN_SLOTS);
        if (blocks[s]) {
            /* Only a prefix is patterned, so that the churn stays fast; it is what a stray free of an
             * interior pointer would be most likely to damage. */
            size_t checked = sizes[s] < 4096 ? sizes[s] : 4096;
            if (tu_pattern_find_mismatch(blocks[s], 0, checked, keys[s]) != SIZE_MAX)
                tu_atomic_increment(&content_errors);
            if (FastMM_FreeMem(blocks[s]) != 0)
                tu_atomic_increment(&content_errors);
            blocks[s] = NULL;
            continue;
        }
        sizes[s] = churn_size(&rng);
        blocks[s] = (uint8_t *)FastMM_GetMem(sizes[s]);
        if (!blocks[s]) {
            tu_atomic_increment(&content_errors);
            continue;
        }
        keys[s] = tu_pattern_key(SEED, index * 100u + s, ++generation);
        tu_pattern_fill(blocks[s], sizes[s] < 4096 ? sizes[s] : 4096, keys[s]);
        tu_atomic_store(&published[tu_rng_below(&rng, PUBLISHED)], (void *)blocks[s]);
        tu_atomic_increment(&churn_operations);
    }
    for (unsigned s = 0; s < CHURN_SLOTS; s++)
        if (blocks[s] && FastMM_FreeMem(blocks[s]) != 0)
            tu_atomic_increment(&content_errors);
}

static void attack(void *arg)
{
    tu_rng rng;
    tu_rng_seed(&rng, SEED * 31 + (uintptr_t)arg);
    while (!tu_atomic_load(&stop)) {
        uint8_t *block = (uint8_t *)tu_atomic_load(&published[tu_rng_below(&rng, PUBLISHED)]);
        if (!block)
            continue;
        /* Interior and 16-byte aligned, so that it passes the alignment test and reaches the span's
         * bookkeeping, but 16 past a multiple of 64: medium and large blocks start on multiples of 64,
         * so it is no block's start even after the block was freed and its space handed out again.
         * Within the first MINIMUM_SIZE bytes, or anywhere in the first 480 KB. */
        size_t offset = 16 + 64 * (size_t)tu_rng_below(&rng, tu_rng_below(&rng, 2) ? (MINIMUM_SIZE - 16) / 64 : 7500);
        uint8_t *bad = block + offset;
        int failed_as_it_must;
        switch (tu_rng_below(&rng, 3)) {
        case 0:
            failed_as_it_must = FastMM_FreeMem(bad) == -1;
            break;
        case 1:
            failed_as_it_must = FastMM_ReallocMem(bad, 100) == NULL;
            break;
        default:
            failed_as_it_must = FastMM_BlockMaximumUserBytes(bad) == 0;
            break;
        }
        if (!failed_as_it_must)
            tu_atomic_increment(&attack_failures_missed);
        tu_atomic_increment(&attacks);
    }
}

/* The attackers make a great many events; only their count matters. */
static tu_atomic_long events_seen;
static void FM5_CALL count_event(const FastMM_Event *event, void *user)
{
    (void)event;
    (void)user;
    tu_atomic_increment(&events_seen);
}

#ifdef FM5_STATIC
/* Two frees of one block race: the loser reads the live status word, the winner frees the block and
 * its region goes back to the OS, then the loser's claim compare-and-swaps the word it read (os.h).
 * Made deterministic here by running the loser's two steps around a whole free: a large block beyond
 * the large-block cache's bound, so that its region is unmapped at once. The compare-and-swap must
 * fail on a tombstone instead of faulting, and the second free is refused. */
static void claim_after_release(void)
{
    SECTION("a free's compare-and-swap on a block whose region was released after its read");
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
    /* ThreadSanitizer performs every atomic operation in its runtime, under its own locks: a fault
     * there cannot be resumed (the handler's mmap would wait for those locks). Every other variant
     * runs this section. */
    tu_info("not run under ThreadSanitizer: its atomic operations cannot fault and resume");
    return;
#endif
#endif
    size_t size = FastMM_GetLargeBlockCacheLimit() + (8u << 20);
    uint8_t *p = FastMM_GetMem(size);
    if (!CHECK(p != NULL))
        return;
    uint16_t live = fm5_status_load(p);
    CHECK(live != 0 && !(live & FM5_STATUS_FREE));
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    /* The precondition: the region is gone, and the address map says it was fm5's. */
    CHECK(fm5_address_map_was_released((uintptr_t)p));
    uint32_t tombstones = fm5_os_release_guard_tombstones();
    CHECK(!fm5_cas_u16(fm5_status_word(p), live, (uint16_t)(live | FM5_STATUS_FREE)));
    CHECK_EQ_INT(fm5_os_release_guard_tombstones() - tombstones, 1);
    CHECK_EQ_INT(fm5_status_load(p), 0);
    long events = tu_atomic_load(&events_seen);
    CHECK_EQ_INT(FastMM_FreeMem(p), -1);
    CHECK_EQ_INT(tu_atomic_load(&events_seen) - events, 1);
}
#endif

int main(void)
{
    tu_init("test_bad_pointer_race");
#ifdef FM5_STATIC
    fm5_initialize();
#endif
    FastMM_SetLogToFileEvents(0);
    FastMM_SetOutputDebugStringEvents(0);
    FastMM_SetEventCallback(count_event, NULL);
#ifdef FM5_STATIC
    claim_after_release();
    tu_atomic_store(&events_seen, 0);
#endif
    SECTION("interior pointers of blocks whose regions are being released, from 3 threads against 3");
    tu_thread threads[CHURN_THREADS + ATTACK_THREADS];
    unsigned started = 0;
    for (unsigned i = 0; i < CHURN_THREADS; i++)
        started += (threads[i] = tu_thread_start(churn, (void *)(uintptr_t)i, 0)) != NULL;
    for (unsigned i = 0; i < ATTACK_THREADS; i++)
        started += (threads[CHURN_THREADS + i] = tu_thread_start(attack, (void *)(uintptr_t)i, 0)) != NULL;
    CHECK_EQ_INT(started, CHURN_THREADS + ATTACK_THREADS);
    tu_sleep_ms(RUN_MS);
    tu_atomic_store(&stop, 1);
    if (tu_thread_join_all(threads, CHURN_THREADS + ATTACK_THREADS, 60000) != started)
        tu_abort_stuck("watchdog: the race threads are not done after 60 s");
    FastMM_SetEventCallback(NULL, NULL);
    tu_info("%ld churn allocations, %ld bad calls, %ld events", (long)churn_operations, (long)attacks,
            (long)events_seen);
    CHECK(churn_operations > 100);
    CHECK(attacks > 1000);
    CHECK_EQ_INT(attack_failures_missed, 0);
    CHECK_EQ_INT(content_errors, 0);
    CHECK_EQ_INT(events_seen, attacks);
    CHECK_EQ_SIZE(tu_used_block_count(), 0);
#ifdef FM5_STATIC
    tu_info("the release guard made %u tombstones (faults of checks racing a release)",
            (unsigned)fm5_os_release_guard_tombstones());
#endif
    return test_finish();
}
