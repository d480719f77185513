/*
 * test_os_failures — every entry point fails cleanly when the OS refuses memory.
 *
 * The OS layer (src/base/os.h) is told to refuse calls (fm5_os_fault_injection): the n-th call of a
 * kind, or a share of them at random. Then:
 *   - GetMem / AllocMem return NULL with one OutOfMemory event, ReallocMem returns NULL and leaves the
 *     old block as it was; nothing else changes;
 *   - a refused mapping is never counted: the memory usage before and after a failed call is the same;
 *   - a refused in-place growth of a large block (map_at) moves the block instead, content intact;
 *   - a refused release (unmap) still frees the block for the program (FreeMem returns 0), reports
 *     ReleaseFailed, and keeps the bytes counted, since they are still mapped;
 *   - under random refusals of every kind, in release and in debug mode, every live block keeps its
 *     content, the checked build's asserts hold, and everything frees at the end;
 *   - and a refusal by the real OS, not injected: a request larger than the user address space
 *     (VirtualAlloc or mmap must refuse it) fails the same way;
 *   - the empty medium spans kept mapped (medium_blocks.h) are every span a free left empty, counted
 *     in the usage, serve medium allocations while the OS refuses every mapping, go back once a second
 *     old down to fm5.h's bound, give way to a large request the OS refuses and to one the usage limit
 *     would refuse, and go back on FastMM_ProcessAllPendingFrees; the low-memory strategy keeps none;
 *     those another manager keeps serve a manager that finds no room before anything is mapped, and
 *     (checked builds, whose first pass a test can make pass over an arena) go back when a manager
 *     would map past the medium spans' peak, unless that other manager's lock is busy then.
 * The large-block cache is off here (FastMM_SetLargeBlockCacheLimit(0)): every large allocation and
 * free must reach the OS for its refusals to be tested; test_large_block_cache covers the cache.
 * Runs on the host build (under ASan/UBSan and TSan) and on both Windows builds (under Wine).
 */
#include "test_util.h"

#include "base/os.h"
#include "api/startup.h"
#include "blocks/medium_blocks.h"

#define SEED 0x05FA11ull
#define SLOTS 256

static const size_t kind_sizes[] = { 24, 1000, 2600, 3000, 40000, 300000, 700000, 3000000 };
#define KIND_SIZES (sizeof kind_sizes / sizeof kind_sizes[0])

typedef struct slot {
    uint8_t *p;
    size_t size;
    uint64_t key;
} slot;

static slot slots[SLOTS];
static uint64_t generation;

static void fill(slot *s, unsigned index)
{
    s->key = tu_pattern_key(SEED, index, ++generation);
    tu_pattern_fill(s->p, s->size, s->key);
}

static void check_all(const char *when)
{
    for (unsigned i = 0; i < SLOTS; i++) {
        if (slots[i].p && tu_pattern_find_mismatch(slots[i].p, 0, slots[i].size, slots[i].key) != SIZE_MAX) {
            CHECK_MSG(0, "%s: block %u (%p, %zu bytes) lost its content", when, i, (void *)slots[i].p, slots[i].size);
            return;
        }
    }
    CHECK(1);
}

static void free_all(void)
{
    for (unsigned i = 0; i < SLOTS; i++) {
        if (slots[i].p)
            CHECK_EQ_INT(FastMM_FreeMem(slots[i].p), 0);
        slots[i].p = NULL;
    }
}

/* The n-th mapping refused, for n = 1..: allocations of every kind until one fails. */
static void refused_mapping(void)
{
    SECTION("the n-th mapping refused: GetMem, AllocMem and ReallocMem fail cleanly, nothing is counted");
    unsigned failures = 0;
    for (unsigned kind = 0; kind < KIND_SIZES; kind++) {
        for (unsigned nth = 1; nth <= 3; nth++) {
            /* No kept empty medium span (medium_blocks.h) may absorb the refusal: it is tested below. */
            FastMM_ProcessAllPendingFrees();
            tu_events_reset();
            fm5_os_fault_injection(FM5_OS_FAULT_MAP, nth, 0, 0);
            unsigned made = 0;
            for (unsigned i = 0; i < SLOTS; i++) {
                size_t usage = FastMM_GetCurrentMemoryUsage();
                long out_of_memory = tu_events_count(FastMM_EventOutOfMemory);
                slot *s = &slots[i];
                s->size = kind_sizes[kind] + i % 7;
                s->p = (uint8_t *)(i % 2 ? FastMM_AllocMem(s->size) : FastMM_GetMem(s->size));
                if (!s->p) {
                    failures++;
                    CHECK_EQ_SIZE(FastMM_GetCurrentMemoryUsage(), usage);
                    CHECK_EQ_INT(tu_events_count(FastMM_EventOutOfMemory), out_of_memory + 1);
                    break;
                }
                if (i % 2)
                    CHECK_MSG(tu_pattern_find_mismatch(s->p, 0, 0, 0) == SIZE_MAX, "AllocMem");
                fill(s, i);
                made++;
                if (made >= 64 && kind < 3)
                    break; /* small blocks need a new span only now and then: enough were tried */
            }
            /* The refusal is spent: ReallocMem growing every block to another kind, with one more
             * refusal armed, either moves a block or leaves it as it was. */
            fm5_os_fault_injection(FM5_OS_FAULT_MAP, 1, 0, 0);
            for (unsigned i = 0; i < SLOTS; i++) {
                slot *s = &slots[i];
                if (!s->p)
                    continue;
                size_t grown = s->size < 1000000 ? s->size * 4 + 600000 : s->size / 8;
                size_t usage = FastMM_GetCurrentMemoryUsage();
                uint8_t *q = (uint8_t *)FastMM_ReallocMem(s->p, grown);
                if (!q) {
                    CHECK_EQ_SIZE(FastMM_GetCurrentMemoryUsage(), usage);
                    CHECK_PATTERN(s->p, s->size, s->key);
                    CHECK(FastMM_BlockMaximumUserBytes(s->p) >= s->size);
                    continue;
                }
                size_t kept = s->size < grown ? s->size : grown;
                CHECK_PATTERN(q, kept, s->key);
                s->p = q;
                s->size = grown;
                fill(s, i);
            }
            fm5_os_fault_injection(0, 0, 0, 0);
            check_all("after refused mappings");
            free_all();
        }
    }
    tu_info("%u allocations refused", failures);
    CHECK(failures > 0);
}

/* Medium blocks of 60,000 bytes over many spans, all freed: the spans left empty that are kept. */
#define KEPT_BLOCKS 600
#define KEPT_BLOCK_SIZE 60000
#define PROBE_BLOCK_SIZE 123456
static void *kept_blocks[KEPT_BLOCKS];

static size_t fill_and_free_medium_spans(void)
{
    for (unsigned i = 0; i < KEPT_BLOCKS; i++)
        CHECK((kept_blocks[i] = FastMM_GetMem(KEPT_BLOCK_SIZE)) != NULL);
    for (unsigned i = 0; i < KEPT_BLOCKS; i++)
        CHECK_EQ_INT(FastMM_FreeMem(kept_blocks[i]), 0);
    return fm5_medium_kept_span_bytes();
}

static void kept_medium_spans(void)
{
    SECTION("empty medium spans: kept within their bound, used while the OS refuses, given back");
    FastMM_ProcessAllPendingFrees();
    CHECK_EQ_SIZE(fm5_medium_kept_span_bytes(), 0);
    size_t base = FastMM_GetCurrentMemoryUsage();
    size_t kept = fill_and_free_medium_spans();
    size_t usage = FastMM_GetCurrentMemoryUsage();
    tu_info("%.1f MB of empty medium spans kept, usage %.1f MB above the start", kept / 1048576.0,
            (double)(usage - base) / 1048576.0);
    /* Every span left empty: all the blocks' bytes but the feed span's and a partly used one's. */
    CHECK_MSG(kept + 2 * FM5_MAXIMUM_MEDIUM_SPAN_SIZE >= (size_t)KEPT_BLOCKS * KEPT_BLOCK_SIZE &&
                  kept > FM5_MEDIUM_KEPT_SPAN_BYTES,
              "%.1f MB kept of %.1f MB freed", kept / 1048576.0, KEPT_BLOCKS * KEPT_BLOCK_SIZE / 1048576.0);
    /* Counted, and nothing else stays: the feed span aside. */
    CHECK(usage >= base + kept && usage <= base + kept + FM5_MAXIMUM_MEDIUM_SPAN_SIZE);

    /* Half of what is kept, with every mapping refused: served without the OS. */
    tu_events_reset();
    fm5_os_fault_injection(FM5_OS_FAULT_MAP, 0, 1000000, SEED);
    unsigned want = (unsigned)(kept / 2 / KEPT_BLOCK_SIZE), served = 0;
    for (unsigned i = 0; i < want; i++)
        served += (kept_blocks[i] = FastMM_GetMem(KEPT_BLOCK_SIZE)) != NULL;
    CHECK_EQ_INT(fm5_os_fault_injection(0, 0, 0, 0), 0);
    CHECK_EQ_INT(served, want);
    CHECK_EQ_INT(tu_events_count(FastMM_EventOutOfMemory), 0);
    for (unsigned i = 0; i < want; i++)
        if (kept_blocks[i])
            CHECK_EQ_INT(FastMM_FreeMem(kept_blocks[i]), 0);

    /* A second later, the next medium call that reaches the arena (a size the thread's cache of
     * medium blocks cannot serve) returns the spans kept beyond the bound, not those within it, and
     * nothing earlier. */
    kept = fill_and_free_medium_spans();
    void *probe = FastMM_GetMem(PROBE_BLOCK_SIZE);
    CHECK(probe != NULL);
    FastMM_FreeMem(probe);
    CHECK_MSG(fm5_medium_kept_span_bytes() + FM5_MAXIMUM_MEDIUM_SPAN_SIZE >= kept, "%.1f MB kept at once of %.1f MB",
              fm5_medium_kept_span_bytes() / 1048576.0, kept / 1048576.0);
    tu_sleep_ms(FM5_MEDIUM_KEPT_SPAN_AGE_MS + 100);
    probe = FastMM_GetMem(PROBE_BLOCK_SIZE + 4096);
    CHECK(probe != NULL);
    FastMM_FreeMem(probe);
    kept = fm5_medium_kept_span_bytes();
    CHECK_MSG(kept <= FM5_MEDIUM_KEPT_SPAN_BYTES &&
                  kept + 2 * FM5_MAXIMUM_MEDIUM_SPAN_SIZE > FM5_MEDIUM_KEPT_SPAN_BYTES,
              "%.1f MB kept a second later", kept / 1048576.0);
    CHECK(FastMM_GetCurrentMemoryUsage() <= base + kept + 2 * FM5_MAXIMUM_MEDIUM_SPAN_SIZE);

    /* A large request the OS refuses once: the kept spans go back, and the second try succeeds. */
    CHECK(fm5_medium_kept_span_bytes() > 0);
    fm5_os_fault_injection(FM5_OS_FAULT_MAP, 1, 0, 0);
    void *large = FastMM_GetMem(3000000);
    CHECK_EQ_INT(fm5_os_fault_injection(0, 0, 0, 0), 1);
    CHECK(large != NULL);
    CHECK_EQ_SIZE(fm5_medium_kept_span_bytes(), 0);
    FastMM_FreeMem(large);

    /* A large request the usage limit would refuse while they are kept: they give way first, and the
     * limit is neither reported nor raised. */
    kept = fill_and_free_medium_spans();
    CHECK(kept > 0);
    tu_events_reset();
    usage = FastMM_GetCurrentMemoryUsage();
    FastMM_SetMemoryUsageLimit(usage - kept + (4u << 20));
    large = FastMM_GetMem(3000000);
    CHECK(large != NULL);
    CHECK_EQ_INT(tu_events_count(FastMM_EventMemoryLimitExceeded), 0);
    CHECK_EQ_SIZE(fm5_medium_kept_span_bytes(), 0);
    FastMM_FreeMem(large);
    FastMM_SetMemoryUsageLimit(0);

    /* FastMM_ProcessAllPendingFrees gives them back. */
    CHECK(fill_and_free_medium_spans() > 0);
    FastMM_ProcessAllPendingFrees();
    CHECK_EQ_SIZE(fm5_medium_kept_span_bytes(), 0);
    CHECK(FastMM_GetCurrentMemoryUsage() <= base + FM5_MAXIMUM_MEDIUM_SPAN_SIZE);

    /* The low-memory strategy keeps none. */
    int strategy = FastMM_GetCurrentOptimizationStrategy();
    FastMM_SetOptimizationStrategy(FastMM_OptimizeForLowMemoryUsage);
    CHECK_EQ_SIZE(fill_and_free_medium_spans(), 0);
    FastMM_SetOptimizationStrategy(strategy);
    FastMM_ProcessAllPendingFrees();
}

/* Kept spans and the medium space's peak (medium_blocks.h). Manager 0 is held by this thread while
 * 600 medium blocks come and go in another manager, which keeps their spans; then, with manager 0
 * free again, as many blocks are allocated. Their first pass finds the other manager's kept spans and
 * takes its blocks from them; in checked builds the first pass is told to pass over every arena but 0
 * (fm5_medium_first_pass_skips), so that manager 0 has to map, and then the peak rule must return the
 * other manager's kept spans first. Either way the medium space stays at its peak instead of doubling
 * and no span stays kept. The exception the header states: a manager whose lock is busy when another
 * maps keeps its spans (this thread holds the keeper's lock in the second round). */
static void kept_spans_and_the_peak(void)
{
    SECTION(FM5_CHECKED ? "kept medium spans give way when another manager would map past the peak"
                        : "kept medium spans of another manager serve before anything is mapped");
    if (!CHECK(fm5_medium_arena_count >= 2))
        return;
    fm5_lock *manager0 = &fm5_medium_managers[0].gate.locked;
    FastMM_ProcessAllPendingFrees();
    CHECK_EQ_SIZE(fm5_medium_kept_span_bytes(), 0);
    size_t base = FastMM_GetCurrentMemoryUsage();
    for (int busy_keeper = 0; busy_keeper < 2; busy_keeper++) {
        if (!CHECK(fm5_try_lock(manager0)))
            return;
        size_t kept = fill_and_free_medium_spans();
        fm5_unlock(manager0);
        size_t peak = FastMM_GetCurrentMemoryUsage();
        tu_info("%.1f MB kept by other managers than the first, usage %.1f MB above the start", kept / 1048576.0,
                (double)(peak - base) / 1048576.0);
        CHECK(kept > (size_t)KEPT_BLOCKS * KEPT_BLOCK_SIZE / 2);
        fm5_lock *keeper = NULL;
        for (uint32_t a = 1; busy_keeper && a < fm5_medium_arena_count && !keeper; a++)
            if (fm5_medium_managers[a].kept_spans)
                keeper = &fm5_medium_managers[a].gate.locked;
        if (busy_keeper && (!CHECK(keeper != NULL) || !CHECK(fm5_try_lock(keeper))))
            return;
#if FM5_CHECKED
        fm5_medium_first_pass_skips = ~(uint32_t)1;
#endif
        for (unsigned i = 0; i < KEPT_BLOCKS; i++)
            CHECK((kept_blocks[i] = FastMM_GetMem(KEPT_BLOCK_SIZE)) != NULL);
#if FM5_CHECKED
        fm5_medium_first_pass_skips = 0;
#endif
        size_t kept_after = fm5_medium_kept_span_bytes(), usage = FastMM_GetCurrentMemoryUsage();
        tu_info("keeper %s: %.1f MB kept after 600 blocks more, usage %.1f MB above the start",
                busy_keeper ? "busy" : "free", kept_after / 1048576.0, (double)(usage - base) / 1048576.0);
        if (busy_keeper) {
            fm5_unlock(keeper);
            CHECK_MSG(kept_after == kept, "%.1f MB of %.1f MB kept", kept_after / 1048576.0, kept / 1048576.0);
        } else {
            CHECK_EQ_SIZE(kept_after, 0);
            CHECK_MSG(usage <= peak + 2 * FM5_MAXIMUM_MEDIUM_SPAN_SIZE, "usage %.1f MB above the peak",
                      ((double)usage - (double)peak) / 1048576.0);
        }
        for (unsigned i = 0; i < KEPT_BLOCKS; i++)
            if (kept_blocks[i])
                CHECK_EQ_INT(FastMM_FreeMem(kept_blocks[i]), 0);
        FastMM_ProcessAllPendingFrees();
        CHECK_EQ_SIZE(fm5_medium_kept_span_bytes(), 0);
    }
}

/* A large block grows in place only when the address space after it can be mapped: refused, it moves. */
static void refused_growth_in_place(void)
{
    SECTION("growth in place refused (map_at): the large block moves, content intact");
    unsigned moved = 0;
    for (unsigned i = 0; i < 16; i++) {
        slot *s = &slots[0];
        s->size = 1000000;
        s->p = (uint8_t *)FastMM_GetMem(s->size);
        if (!CHECK(s->p != NULL))
            return;
        fill(s, 0);
        /* Every map_at refused: fm5 tries the generous size, then the needed one. */
        fm5_os_fault_injection(FM5_OS_FAULT_MAP_AT, 0, 1000000, 1);
        uint8_t *q = (uint8_t *)FastMM_ReallocMem(s->p, 1100000);
        uint32_t refused = fm5_os_fault_injection(0, 0, 0, 0);
        if (CHECK(q != NULL)) {
            CHECK_PATTERN(q, s->size, s->key);
            moved += refused >= 1 && q != s->p;
            CHECK_MSG(refused == 0 || q != s->p, "grew in place although map_at was refused");
            s->p = q;
        }
        free_all();
    }
    tu_info("%u of 16 growths were refused and moved", moved);
}

/* A refused release: the program's free succeeds, the bytes stay mapped and counted. */
static void refused_release(void)
{
    SECTION("release refused (unmap): FreeMem succeeds, ReleaseFailed is reported, the bytes stay counted");
    size_t size = 5000000;
    void *p = FastMM_GetMem(size);
    if (!CHECK(p != NULL))
        return;
    memset(p, 0x5A, size);
    /* The earlier sections' kept medium spans go first: the refused unmap must be the block's. */
    FastMM_ProcessAllPendingFrees();
    size_t usage = FastMM_GetCurrentMemoryUsage();
    tu_events_reset();
    fm5_os_fault_injection(FM5_OS_FAULT_UNMAP, 1, 0, 0);
    CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    FastMM_ProcessAllPendingFrees();
    CHECK_EQ_INT(fm5_os_fault_injection(0, 0, 0, 0), 1);
    CHECK_EQ_INT(tu_events_count(FastMM_EventReleaseFailed), 1);
    CHECK_EQ_SIZE(FastMM_GetCurrentMemoryUsage(), usage);
    /* fm5 forgot the block: it is neither live nor a valid pointer any more. */
    CHECK_EQ_INT(FastMM_FreeMem(p), -1);
    void *again = FastMM_GetMem(size);
    CHECK(again != NULL);
    CHECK_EQ_INT(FastMM_FreeMem(again), 0);
}

/* The OS itself refuses: no injection, a region larger than the process's address space. */
static void real_refusal(void)
{
    SECTION("a request larger than the address space: the OS itself refuses");
    /* Win32: 2 GB less 1 MB, more than a 2 GB user space can hold in one piece; 64-bit: 128 TB, the
     * whole user space of x86-64 Windows and Linux. */
    size_t huge = TU_64BIT ? (size_t)1 << 47 : (size_t)0x7FF00000u;
    slot *s = &slots[0];
    s->size = 100000;
    s->p = (uint8_t *)FastMM_GetMem(s->size);
    if (!CHECK(s->p != NULL))
        return;
    fill(s, 0);
    size_t usage = FastMM_GetCurrentMemoryUsage();
    tu_events_reset();
    CHECK(FastMM_GetMem(huge) == NULL);
    CHECK(FastMM_AllocMem(huge) == NULL);
    CHECK(FastMM_ReallocMem(s->p, huge) == NULL);
    CHECK_PATTERN(s->p, s->size, s->key);
    CHECK_EQ_SIZE(FastMM_GetCurrentMemoryUsage(), usage);
    CHECK_MSG(tu_events_count(FastMM_EventOutOfMemory) >= 3, "%ld OutOfMemory events for three refused requests",
              tu_events_count(FastMM_EventOutOfMemory));
    free_all();
}

/* Random refusals of every kind under a random workload. */
static void random_refusals(int debug)
{
    SECTION(debug ? "random refusals of every kind, debug mode" : "random refusals of every kind");
    if (debug)
        CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    tu_rng rng;
    tu_rng_seed(&rng, SEED + (uint64_t)debug);
    fm5_os_fault_injection(FM5_OS_FAULT_ALL, 0, 250000, SEED + 7);
    unsigned failed_allocations = 0, failed_reallocations = 0;
    for (unsigned op = 0; op < 6000; op++) {
        unsigned i = (unsigned)tu_rng_below(&rng, SLOTS);
        slot *s = &slots[i];
        size_t size = kind_sizes[tu_rng_below(&rng, KIND_SIZES)] + (size_t)tu_rng_below(&rng, 100);
        if (!s->p) {
            s->p = (uint8_t *)FastMM_GetMem(size);
            if (!s->p) {
                failed_allocations++;
                continue;
            }
            s->size = size;
            fill(s, i);
        } else if (tu_rng_below(&rng, 3) == 0) {
            CHECK_PATTERN(s->p, s->size, s->key);
            CHECK_EQ_INT(FastMM_FreeMem(s->p), 0);
            s->p = NULL;
        } else {
            uint8_t *q = (uint8_t *)FastMM_ReallocMem(s->p, size);
            if (!q) {
                failed_reallocations++;
                CHECK_PATTERN(s->p, s->size, s->key);
                continue;
            }
            CHECK_PATTERN(q, s->size < size ? s->size : size, s->key);
            s->p = q;
            s->size = size;
            fill(s, i);
        }
        if (op % 500 == 0)
            check_all("during random refusals");
    }
    uint32_t refused = fm5_os_fault_injection(0, 0, 0, 0);
    tu_info("%u OS calls refused: %u allocations and %u reallocations failed", refused, failed_allocations,
            failed_reallocations);
    CHECK(refused > 0);
    check_all("after random refusals");
    if (debug)
        CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
    free_all();
    if (debug)
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
}

int main(void)
{
    tu_init("test_os_failures");
    fm5_initialize();
    FastMM_SetLargeBlockCacheLimit(0);
    tu_events_install(0);
    refused_mapping();
    kept_medium_spans();
    kept_spans_and_the_peak();
    refused_growth_in_place();
    refused_release();
    real_refusal();
    random_refusals(0);
    random_refusals(1);
    FastMM_ProcessAllPendingFrees();
    FastMM_SetEventCallback(NULL, NULL);
    return test_finish();
}
