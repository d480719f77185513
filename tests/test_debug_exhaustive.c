/*
 * test_debug_exhaustive — every byte of freed debug blocks, corrupted one at a time, must be found by
 * FastMM_ScanDebugBlocksForCorruption and reported at exactly its offset:
 *   (a) seed 000 (FastMM5 PR #96, FastMMDebugPatternTest): freed user sizes 1..65 and 257, every byte
 *       position, each in a fresh block: the scan returns 0 with exactly one FreedBlockModified event
 *       naming the block and listing exactly "<offset>(1)"; with the byte restored the next scan is
 *       clean (the reported block is out of circulation). This covers the freed-object marker (from 16
 *       bytes on Win64, 8 on Win32) and every 32/8/4/2/1-byte remainder of the checker;
 *   (b) seed 001 (FastMM5 PR #97 follow-up): 12 medium user sizes whose checked region (everything
 *       after the pointer-sized marker) ends in every 16-byte vector remainder of a 64-byte step and
 *       every 1/2/3/7/15-byte scalar tail, 34,949 byte positions in all, each corrupted in its own
 *       freed block. Blocks are corrupted in batches (one position per block, one scan per batch) and
 *       every block of a batch must be reported exactly once with its own offset.
 * Both run in the real allocator, in debug mode with the default options; debug mode is left as it
 * was found (counter 0); events go to the recorder only.
 */
#include "test_util.h"

#define SEED 0xE4A0ull

static const void *freed_marker;
static int freed_marker_known;

/* Non-zero XOR masks, so that a corrupted byte always differs; varied so that a checker comparing
 * with a sign or a mask cannot get lucky on one particular value. */
static const uint8_t corruption_masks[8] = {0xFF, 0x01, 0x80, 0x7F, 0x10, 0x08, 0x02, 0x40};

static void learn_marker(const uint8_t *freed_block, size_t n)
{
    if (freed_marker_known || n < TU_DEBUG_FREED_OBJECT_MINIMUM_SIZE)
        return;
    memcpy(&freed_marker, freed_block, sizeof freed_marker);
    freed_marker_known = 1;
}

/* ---- (a) seed 000 ----------------------------------------------------------------------------- */

static void seed_000(void)
{
    SECTION("seed 000: freed sizes 1..65 and 257, every byte corrupted in turn");
    size_t positions = 0, detected = 0, clean_after = 0;
    unsigned long long started = tu_ms();
    for (size_t n = 1; n <= 258; n++) {
        if (n > 65 && n != 257)
            continue;
        for (size_t at = 0; at < n; at++) {
            uint8_t *p = (uint8_t *)FastMM_GetMem(n);
            if (!CHECK_MSG(p != NULL && tu_is_debug_block(p), "GetMem(%zu) gave no debug block", n))
                return;
            if (CHECK_EQ_INT(FastMM_FreeMem(p), 0) == 0)
                return;
            learn_marker(p, n);
            if (at == 0) {
                size_t bad = tu_debug_freed_mismatch(p, n, freed_marker);
                CHECK_MSG(bad == SIZE_MAX, "freed %zu-byte block: byte %zu is 0x%02x before any corruption", n, bad,
                          bad == SIZE_MAX ? 0 : p[bad]);
            }
            uint8_t mask = corruption_masks[(at + n) % 8];
            positions++;
            p[at] ^= mask;
            tu_events_reset();
            int result = FastMM_ScanDebugBlocksForCorruption();
            const tu_event *e = tu_events_get(0);
            char list[128] = "", expected[32];
            snprintf(expected, sizeof expected, "%zu(1)", at);
            int listed = e && tu_modified_offsets(e->text, list, sizeof list) && strcmp(list, expected) == 0;
            int ok = result == 0 && tu_events_total() == 1 && e && e->kind == FastMM_EventFreedBlockModified &&
                     e->pointer == p && listed;
            detected += ok;
            CHECK_MSG(ok, "%zu bytes, byte %zu ^ 0x%02x: scan %d, %ld event(s), first %s for %p (block %p), list \"%s\"", n,
                      at, mask, result, (long)tu_events_total(), e ? tu_event_kind_name(e->kind) : "-",
                      e ? e->pointer : NULL, (void *)p, list);
            p[at] ^= mask;
            tu_events_reset();
            result = FastMM_ScanDebugBlocksForCorruption();
            int clean = result == 1 && tu_events_total() == 0;
            clean_after += clean;
            CHECK_MSG(clean, "%zu bytes, byte %zu restored: scan %d with %ld event(s)", n, at, result,
                      (long)tu_events_total());
        }
    }
    tu_info("seed 000: %zu of %zu positions detected exactly, %zu clean scans after restoring, %llu ms", detected,
            positions, clean_after, tu_ms() - started);
    CHECK_EQ_SIZE(positions, 65 * 66 / 2 + 257);
    CHECK_EQ_SIZE(detected, positions);
}

/* ---- (b) seed 001 ----------------------------------------------------------------------------- */

/*
 * The freed-pattern checker compares what follows the pointer-sized freed-object marker: a region of
 * R = size - sizeof(void *) bytes. A vector checker works in 16-byte units, several per step (64 bytes
 * here), and leaves a scalar tail of R % 16 bytes. Each size below is chosen for one remainder class:
 *
 *     R = 64 * k + 16 * v + t    v*16 = vector remainder (0/16/32/48), t = scalar tail (0/1/2/3/7/15)
 *
 * Win64 (marker 8 bytes, size = R + 8):
 *     k   v*16  t    R      size
 *     41   0    0    2624   2632     exact multiple of 64
 *     41  16    0    2640   2648
 *     42  32    0    2720   2728
 *     43  48    0    2800   2808
 *     44   0    1    2817   2825
 *     45  16    2    2898   2906
 *     45  32    3    2915   2923
 *     46  48    7    2999   3007
 *     47   0   15    3023   3031
 *     48  48   15    3135   3143     largest remainder: 63
 *     48   0    7    3079   3087
 *     50   0    3    3203   3211
 *   sum of R = 64 * 540 + 293 = 34853; sum of sizes = 34853 + 12 * 8 = 34949
 *
 * Win32 (marker 4 bytes, size = R + 4): the same classes, except 48/15 becomes 32/15 (k 48) and the last
 * k is 51, so that the total stays the same:
 *     41 0 0 2624 2628 | 41 16 0 2640 2644 | 42 32 0 2720 2724 | 43 48 0 2800 2804 | 44 0 1 2817 2821 |
 *     45 16 2 2898 2902 | 45 32 3 2915 2919 | 46 48 7 2999 3003 | 47 0 15 3023 3027 | 48 32 15 3119 3123 |
 *     48 0 7 3079 3083 | 51 0 3 3267 3271
 *   sum of R = 64 * 541 + 277 = 34901; sum of sizes = 34901 + 12 * 4 = 34949
 *
 * Every size is above 2622, so every block (and its outer block) is a medium block; all are far above
 * the 128 units (2048 bytes) from which a vector checker takes over.
 */
#define SEED001_POSITIONS 34949u
#if TU_64BIT
static const size_t seed001_sizes[12] = {2632, 2648, 2728, 2808, 2825, 2906, 2923, 3007, 3031, 3143, 3087, 3211};
_Static_assert(2632 + 2648 + 2728 + 2808 + 2825 + 2906 + 2923 + 3007 + 3031 + 3143 + 3087 + 3211 ==
                   SEED001_POSITIONS,
               "seed 001: 34,949 byte positions on Win64");
#else
static const size_t seed001_sizes[12] = {2628, 2644, 2724, 2804, 2821, 2902, 2919, 3003, 3027, 3123, 3083, 3271};
_Static_assert(2628 + 2644 + 2724 + 2804 + 2821 + 2902 + 2919 + 3003 + 3027 + 3123 + 3083 + 3271 ==
                   SEED001_POSITIONS,
               "seed 001: 34,949 byte positions on Win32");
#endif

#define BATCH 512u

typedef struct batch_block {
    uintptr_t address;
    size_t position;
    uint8_t mask;
    int reports;
} batch_block;

static int batch_compare(const void *a, const void *b)
{
    uintptr_t x = ((const batch_block *)a)->address, y = ((const batch_block *)b)->address;
    return x < y ? -1 : x > y;
}

static batch_block *batch_find(batch_block *blocks, size_t count, const void *p)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (blocks[mid].address == (uintptr_t)p)
            return &blocks[mid];
        if (blocks[mid].address < (uintptr_t)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void seed_001(void)
{
    SECTION("seed 001: 34,949 positions of 12 medium freed block sizes");
    /* The sizes cover every class they are meant to. */
    unsigned vector_classes = 0, tail_classes = 0;
    size_t total = 0;
    for (size_t s = 0; s < 12; s++) {
        size_t region = seed001_sizes[s] - sizeof(void *);
        vector_classes |= 1u << (region % 64 / 16);
        tail_classes |= 1u << (region % 16);
        total += seed001_sizes[s];
        CHECK(seed001_sizes[s] >= TU_MIN_MEDIUM_USER);
    }
    CHECK_EQ_SIZE(vector_classes, 0xFu);
    CHECK_EQ_SIZE(tail_classes, (1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | (1u << 7) | (1u << 15));
    CHECK_EQ_SIZE(total, SEED001_POSITIONS);

    static batch_block batch[BATCH];
    static uint8_t *pointers[BATCH];
    size_t positions = 0, detected = 0, batches = 0, bad_batches = 0;
    unsigned long long started = tu_ms();
    for (size_t s = 0; s < 12; s++) {
        size_t n = seed001_sizes[s];
        size_t detected_here = 0;
        for (size_t first = 0; first < n; first += BATCH) {
            size_t count = n - first < BATCH ? n - first : BATCH;
            batches++;
            for (size_t j = 0; j < count; j++) {
                pointers[j] = (uint8_t *)FastMM_GetMem(n);
                if (!CHECK_MSG(pointers[j] != NULL && tu_is_debug_block(pointers[j]), "GetMem(%zu) gave no debug block",
                               n))
                    return;
            }
            for (size_t j = 0; j < count; j++)
                if (CHECK_EQ_INT(FastMM_FreeMem(pointers[j]), 0) == 0)
                    return;
            learn_marker(pointers[0], n);
            if (first == 0) {
                size_t bad = tu_debug_freed_mismatch(pointers[0], n, freed_marker);
                CHECK_MSG(bad == SIZE_MAX, "freed %zu-byte block: byte %zu wrong before any corruption", n, bad);
            }
            for (size_t j = 0; j < count; j++) {
                size_t at = first + j;
                uint8_t mask = corruption_masks[(at / 3 + s) % 8];
                pointers[j][at] ^= mask;
                batch[j].address = (uintptr_t)pointers[j];
                batch[j].position = at;
                batch[j].mask = mask;
                batch[j].reports = 0;
            }
            positions += count;
            qsort(batch, count, sizeof batch[0], batch_compare);

            tu_events_reset();
            int result = FastMM_ScanDebugBlocksForCorruption();
            size_t events = tu_events_stored();
            int batch_ok = CHECK_MSG(result == 0 && events == count && tu_events_dropped() == 0,
                                     "%zu bytes, positions %zu..%zu: scan %d with %zu events (%ld dropped) for %zu blocks",
                                     n, first, first + count - 1, result, events, (long)tu_events_dropped(), count);
            size_t printed = 0;
            for (size_t i = 0; i < events; i++) {
                const tu_event *e = tu_events_get(i);
                batch_block *b = batch_find(batch, count, e->pointer);
                char list[128] = "", expected[32];
                if (b)
                    snprintf(expected, sizeof expected, "%zu(1)", b->position);
                int listed = b && tu_modified_offsets(e->text, list, sizeof list) && strcmp(list, expected) == 0;
                int ok = b && e->kind == FastMM_EventFreedBlockModified && b->reports == 0 && listed;
                if (b)
                    b->reports++;
                if (ok) {
                    detected++;
                    detected_here++;
                } else {
                    batch_ok = 0;
                    if (printed++ < 5)
                        CHECK_MSG(0, "%zu bytes: event %zu is %s for %p (%s), list \"%s\", expected \"%s\"", n, i,
                                  tu_event_kind_name(e->kind), e->pointer,
                                  b ? (b->reports > 1 ? "reported twice" : "a block of the batch") : "not in the batch",
                                  list, b ? expected : "-");
                }
            }
            for (size_t j = 0; j < count; j++)
                if (batch[j].reports == 0 && printed++ < 5)
                    CHECK_MSG(0, "%zu bytes: byte %zu ^ 0x%02x of %p was not reported", n, batch[j].position,
                              batch[j].mask, (void *)batch[j].address);

            for (size_t j = 0; j < count; j++)
                ((uint8_t *)batch[j].address)[batch[j].position] ^= batch[j].mask;
            tu_events_reset();
            result = FastMM_ScanDebugBlocksForCorruption();
            batch_ok &= CHECK_MSG(result == 1 && tu_events_total() == 0,
                                  "%zu bytes, positions %zu..: scan after restoring returned %d with %ld events", n,
                                  first, result, (long)tu_events_total());
            bad_batches += !batch_ok;
        }
        CHECK_MSG(detected_here == n, "%zu bytes: %zu of %zu positions detected", n, detected_here, n);
    }
    printf("exhaustive: %zu positions detected of %u\n", detected, SEED001_POSITIONS);
    tu_info("%zu batches (%zu with a problem), %zu positions corrupted, %llu ms", batches, bad_batches, positions,
            tu_ms() - started);
    CHECK_EQ_SIZE(positions, SEED001_POSITIONS);
    CHECK_EQ_SIZE(detected, SEED001_POSITIONS);
}

int main(void)
{
    tu_init("test_debug_exhaustive");
    CHECK(tu_events_install(TU_KEEP_ALL_EVENTS));
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    CHECK_EQ_SIZE(FastMM_GetDebugModeOptions(), TU_DEBUG_DEFAULT_OPTIONS);
    CHECK_EQ_SIZE(FastMM_GetDebugModeStackTraceEntryCount(), TU_DEBUG_DEFAULT_DEPTH);

    seed_000();
    seed_001();

    SECTION("debug mode left as found");
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    FastMM_SetEventCallback(NULL, NULL);
    return test_finish();
}
