/*
 * test_debug_scan — FastMM_ScanDebugBlocksForCorruption and the checks of FreeMem, ReallocMem and reuse:
 *   - ScanCoverage (FastMM5 #102), at user sizes 100, 2000, 50000 and a real large block of 600000 (the
 *     300000 of FastMM5's test is a medium block): a changed byte of the checksummed header, a write one
 *     past the end (the footer checksum) and a changed allocation-trace entry are each found by a scan
 *     (0, one event of the right kind naming the block), and the scan is clean again once the bytes are
 *     restored; FreeMem and ReallocMem of such a live block refuse with the same event and leave it
 *     alone; a write after free at 100, 2000 and 50000 bytes is reported as FreedBlockModified listing
 *     exactly "offset(1)", reported again by every scan until it is restored, and a second write to
 *     the same block is reported with its own offset;
 *   - the FreedBlockModified list: adjacent bytes form one "offset(length)" range (also across the end
 *     of the freed-object marker), ranges ascend, at most 32 are listed;
 *   - a corrupted freed block met on reuse is reported, never handed out, and reported by every scan
 *     until it is restored (test_debug_rescan covers every byte position);
 *   - ScanRace: 4 threads churn small debug blocks for about 2 s while this thread scans: every scan
 *     returns 1 and nothing is reported;
 *   - ScanHeaderBounds: a live or freed block whose user size is huge or whose stack-trace entry count
 *     is 65..255 gives a header event, not a crash, also when the header checksum was forged to match.
 * Debug mode is left as it was found (counter 0); events go to the recorder only.
 */
#include "test_util.h"

#define SEED 0x5CA9ull

static const void *freed_marker;
static int freed_marker_known;

/* Names the first few captured events, for failure messages. */
static void describe_events(char *out, size_t out_size)
{
    out[0] = 0;
    size_t used = 0;
    for (size_t i = 0; i < tu_events_stored() && i < 3 && used < out_size; i++) {
        const tu_event *e = tu_events_get(i);
        int n = snprintf(out + used, out_size - used, "%s[%s %p: \"%.160s\"]", i ? " " : "",
                         tu_event_kind_name(e->kind), e->pointer, e->text);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* Scans once and expects exactly one event, of `kind`, naming `p`; with `offsets`, a FreedBlockModified
 * text whose list is exactly that. Returns 1 when all of it held. */
static int expect_scan_report(const void *p, int kind, const char *offsets, const char *where)
{
    tu_events_reset();
    int result = FastMM_ScanDebugBlocksForCorruption();
    char seen[700];
    describe_events(seen, sizeof seen);
    int ok = CHECK_MSG(result == 0, "%s: the scan returned %d", where, result);
    ok &= CHECK_MSG(tu_events_total() == 1 && tu_events_count(kind) == 1, "%s: expected one %s event, got %ld: %s",
                    where, tu_event_kind_name(kind), (long)tu_events_total(), seen);
    const tu_event *e = tu_events_get(0);
    if (e) {
        ok &= CHECK_MSG(e->pointer == p, "%s: the event names %p, not %p", where, e->pointer, p);
        ok &= CHECK_MSG(tu_text_mentions_hex(e->text, (uintptr_t)p), "%s: the text does not show %p", where, p);
        if (offsets) {
            char list[256];
            int found = tu_modified_offsets(e->text, list, sizeof list);
            ok &= CHECK_MSG(found && strcmp(list, offsets) == 0, "%s: modified offsets \"%s\", expected \"%s\"", where,
                            found ? list : "(no list)", offsets);
        }
    }
    return ok;
}

/* Scans once and expects a clean report. */
static int expect_clean_scan(const char *where)
{
    tu_events_reset();
    int result = FastMM_ScanDebugBlocksForCorruption();
    char seen[700];
    describe_events(seen, sizeof seen);
    return CHECK_MSG(result == 1 && tu_events_total() == 0, "%s: scan returned %d with %ld event(s): %s", where, result,
                     (long)tu_events_total(), seen);
}

/* FreeMem or ReallocMem of a corrupted live block: refused with one event of `kind`, and the block left
 * as it was (header and the start of the user data compared byte for byte). */
static void expect_refused_operations(uint8_t *p, size_t n, int kind, const char *where)
{
    uint8_t header[TU_DEBUG_HEADER_SIZE], data[256];
    size_t data_size = n < sizeof data ? n : sizeof data;
    memcpy(header, tu_debug_header(p), sizeof header);
    memcpy(data, p, data_size);
    tu_events_reset();
    CHECK_MSG(FastMM_FreeMem(p) == -1, "%s: FreeMem of the corrupted block did not fail", where);
    CHECK_MSG(tu_events_total() == 1 && tu_events_count(kind) == 1 && tu_events_find(kind, p) != NULL,
              "%s, FreeMem: %ld events, %ld of kind %s about the block", where, (long)tu_events_total(),
              (long)tu_events_count(kind), tu_event_kind_name(kind));
    CHECK_MSG(tu_status_word(p) == TU_DEBUG_IN_USE && memcmp(header, tu_debug_header(p), sizeof header) == 0 &&
                  memcmp(data, p, data_size) == 0,
              "%s: the refused free changed the block (status %u)", where, tu_status_word(p));
    tu_events_reset();
    CHECK_MSG(FastMM_ReallocMem(p, n + 1000) == NULL, "%s: ReallocMem of the corrupted block did not fail", where);
    CHECK_MSG(tu_events_total() == 1 && tu_events_count(kind) == 1 && tu_events_find(kind, p) != NULL,
              "%s, ReallocMem: %ld events, %ld of kind %s about the block", where, (long)tu_events_total(),
              (long)tu_events_count(kind), tu_event_kind_name(kind));
    CHECK_MSG(tu_status_word(p) == TU_DEBUG_IN_USE && memcmp(header, tu_debug_header(p), sizeof header) == 0 &&
                  memcmp(data, p, data_size) == 0,
              "%s: the refused realloc changed the block (status %u)", where, tu_status_word(p));
    tu_events_reset();
}

/* ---- ScanCoverage (#102) ---------------------------------------------------------------------- */

static void scan_coverage(void)
{
    static const size_t sizes[] = {100, 2000, 50000, 600000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        char title[96], where[160];
        snprintf(title, sizeof title, "ScanCoverage: %zu bytes (%s)", n, tu_kind_name(tu_expected_kind(n)));
        SECTION(title);
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        CHECK(tu_is_debug_block(p));
        uint64_t key = tu_pattern_key(SEED, i, 0);
        tu_pattern_fill(p, n, key);
        expect_clean_scan("before corruption");

        /* Header: checksummed fields, one byte each. */
        static const unsigned header_offsets[] = {TU_DEBUG_TICK_OFFSET, TU_DEBUG_NUMBER_OFFSET + 1, TU_DEBUG_GROUP_OFFSET,
                                                  TU_DEBUG_ALLOCATED_BY_OFFSET + 2, TU_DEBUG_FREED_BY_OFFSET};
        for (size_t k = 0; k < sizeof header_offsets / sizeof header_offsets[0]; k++) {
            uint8_t *b = tu_debug_header(p) + header_offsets[k];
            *b ^= 0x01;
            snprintf(where, sizeof where, "%zu bytes, header byte %u changed", n, header_offsets[k]);
            expect_scan_report(p, FastMM_EventDebugBlockHeaderCorrupted, NULL, where);
            if (k == 0)
                expect_refused_operations(p, n, FastMM_EventDebugBlockHeaderCorrupted, where);
            *b ^= 0x01;
            snprintf(where, sizeof where, "%zu bytes, header byte %u restored", n, header_offsets[k]);
            expect_clean_scan(where);
        }

        /* Footer: one byte past the end of the user data (the footer checksum), and a trace entry. */
        p[n] ^= 0xFF;
        snprintf(where, sizeof where, "%zu bytes, write one past the end", n);
        expect_scan_report(p, FastMM_EventDebugBlockFooterCorrupted, NULL, where);
        expect_refused_operations(p, n, FastMM_EventDebugBlockFooterCorrupted, where);
        p[n] ^= 0xFF;
        snprintf(where, sizeof where, "%zu bytes, footer restored", n);
        expect_clean_scan(where);
        if (tu_debug_entry_count(p) > 0) {
            uint8_t *entry = tu_debug_footer(p) + 4 + 1;
            *entry ^= 0x10;
            snprintf(where, sizeof where, "%zu bytes, allocation trace changed", n);
            expect_scan_report(p, FastMM_EventDebugBlockFooterCorrupted, NULL, where);
            *entry ^= 0x10;
            snprintf(where, sizeof where, "%zu bytes, trace restored", n);
            expect_clean_scan(where);
        }
        CHECK_PATTERN(p, n, key);
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        /* A freed large block is back with the OS: it is never touched again. */
        if (tu_expected_kind(n) == FastMM_LargeBlock) {
            expect_clean_scan("after freeing the large block");
            continue;
        }

        /* Write after free. */
        p = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        if (!freed_marker_known) {
            memcpy(&freed_marker, p, sizeof freed_marker);
            freed_marker_known = 1;
        }
        CHECK_EQ_SIZE(tu_debug_freed_mismatch(p, n, freed_marker), SIZE_MAX);
        expect_clean_scan("a freed block, untouched");
        size_t at = n / 2;
        p[at] ^= 0x01;
        char offsets[32];
        snprintf(offsets, sizeof offsets, "%zu(1)", at);
        snprintf(where, sizeof where, "%zu bytes, write after free at %zu", n, at);
        expect_scan_report(p, FastMM_EventFreedBlockModified, offsets, where);
        /* Reported by every scan while the damage lasts (in one line when it is unchanged). */
        snprintf(where, sizeof where, "%zu bytes, second scan of the reported block", n);
        expect_scan_report(p, FastMM_EventFreedBlockModified, NULL, where);
        p[at] ^= 0x01;
        snprintf(where, sizeof where, "%zu bytes, write after free restored", n);
        expect_clean_scan(where);
        /* Another write to the same block: a report of its own. */
        p[at / 2] ^= 0x08;
        snprintf(offsets, sizeof offsets, "%zu(1)", at / 2);
        snprintf(where, sizeof where, "%zu bytes, second write after free at %zu", n, at / 2);
        expect_scan_report(p, FastMM_EventFreedBlockModified, offsets, where);
        p[at / 2] ^= 0x08;
        snprintf(where, sizeof where, "%zu bytes, second write after free restored", n);
        expect_clean_scan(where);
    }
    /* Several corrupted blocks in one scan: one event each. */
    SECTION("ScanCoverage: three corrupted blocks in one scan");
    uint8_t *a = (uint8_t *)FastMM_GetMem(300), *b = (uint8_t *)FastMM_GetMem(7000), *c = (uint8_t *)FastMM_GetMem(900);
    if (CHECK(a && b && c)) {
        CHECK_EQ_INT(FastMM_FreeMem(c), 0);
        tu_debug_header(a)[TU_DEBUG_GROUP_OFFSET] ^= 0x80;
        b[7000] ^= 0x01;
        c[899] ^= 0x04;
        tu_events_reset();
        CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 0);
        CHECK_EQ_INT(tu_events_total(), 3);
        CHECK(tu_events_find(FastMM_EventDebugBlockHeaderCorrupted, a) != NULL);
        CHECK(tu_events_find(FastMM_EventDebugBlockFooterCorrupted, b) != NULL);
        const tu_event *e = tu_events_find(FastMM_EventFreedBlockModified, c);
        char list[64];
        CHECK_MSG(e && tu_modified_offsets(e->text, list, sizeof list) && strcmp(list, "899(1)") == 0,
                  "three blocks: the freed one's list is \"%s\"", e ? list : "(no event)");
        tu_debug_header(a)[TU_DEBUG_GROUP_OFFSET] ^= 0x80;
        b[7000] ^= 0x01;
        c[899] ^= 0x04;
        expect_clean_scan("three blocks restored");
        CHECK_EQ_INT(FastMM_FreeMem(a), 0);
        CHECK_EQ_INT(FastMM_FreeMem(b), 0);
    }
    tu_events_reset();
}

/* ---- the list of modified ranges -------------------------------------------------------------- */

static void modified_ranges(void)
{
    SECTION("FreedBlockModified: adjacent bytes form one range, at most 32 ranges");
    uint8_t *p = (uint8_t *)FastMM_GetMem(1000);
    if (CHECK(p != NULL)) {
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        for (size_t i = 100; i < 104; i++)
            p[i] ^= 0x0F;
        p[200] ^= 0x01;
        p[202] ^= 0x01;
        p[999] ^= 0x01;
        expect_scan_report(p, FastMM_EventFreedBlockModified, "100(4) 200(1) 202(1) 999(1)", "four ranges");
        for (size_t i = 100; i < 104; i++)
            p[i] ^= 0x0F;
        p[200] ^= 0x01;
        p[202] ^= 0x01;
        p[999] ^= 0x01;
    }
    /* A range that starts in the freed-object marker and runs into the fill. */
    p = (uint8_t *)FastMM_GetMem(64);
    if (CHECK(p != NULL)) {
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        size_t from = sizeof(void *) - 2;
        for (size_t i = from; i < from + 5; i++)
            p[i] ^= 0xFF;
        char expected[32];
        snprintf(expected, sizeof expected, "%zu(5)", from);
        expect_scan_report(p, FastMM_EventFreedBlockModified, expected, "a range across the marker's end");
        for (size_t i = from; i < from + 5; i++)
            p[i] ^= 0xFF;
    }
    p = (uint8_t *)FastMM_GetMem(2000);
    if (CHECK(p != NULL)) {
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        char expected[400] = "";
        size_t used = 0;
        for (size_t i = 0; i < 40; i++) {
            p[10 + 20 * i] ^= 0x20;
            if (i < 32)
                used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%zu(1)", i ? " " : "", 10 + 20 * i);
        }
        expect_scan_report(p, FastMM_EventFreedBlockModified, expected, "40 ranges, 32 listed");
        for (size_t i = 0; i < 40; i++)
            p[10 + 20 * i] ^= 0x20;
    }
    expect_clean_scan("after the range reports");
    tu_events_reset();
}

/* ---- a corrupted freed block met on reuse ----------------------------------------------------- */

static void reuse_quarantine(void)
{
    SECTION("a corrupted freed block met on reuse: reported, never handed out, rescanned");
    static const size_t sizes[] = {1500, 7000};
    enum { TRIES = 64 };
    for (size_t i = 0; i < 2; i++) {
        size_t n = sizes[i];
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        p[10] ^= 0x40;
        tu_events_reset();
        void *blocks[TRIES];
        int handed_out = 0;
        for (int k = 0; k < TRIES; k++) {
            blocks[k] = FastMM_GetMem(n);
            CHECK(blocks[k] != NULL);
            handed_out |= blocks[k] == p;
        }
        CHECK_MSG(!handed_out, "%zu bytes: the corrupted freed block was handed out again", n);
        long on_reuse = tu_events_count(FastMM_EventFreedBlockModified);
        CHECK_MSG(on_reuse <= 1 && tu_events_total() == on_reuse, "%zu bytes: %ld events while allocating", n,
                  (long)tu_events_total());
        tu_info("%zu bytes: the corruption was %s", n, on_reuse ? "found on reuse" : "not met on reuse");
        int scan = FastMM_ScanDebugBlocksForCorruption();
        CHECK_MSG(scan == 0, "%zu bytes: the scan after %s returned %d", n,
                  on_reuse ? "a report on reuse" : "no report", scan);
        CHECK_MSG(tu_events_total() == on_reuse + 1 && tu_events_count(FastMM_EventFreedBlockModified) == on_reuse + 1,
                  "%zu bytes: %ld events in all, expected %ld FreedBlockModified", n, (long)tu_events_total(),
                  (long)on_reuse + 1);
        const tu_event *e = tu_events_find(FastMM_EventFreedBlockModified, p);
        char list[64];
        CHECK_MSG(e && tu_modified_offsets(e->text, list, sizeof list) && strcmp(list, "10(1)") == 0,
                  "%zu bytes: no report naming %p with offsets \"10(1)\"", n, (void *)p);
        p[10] ^= 0x40;
        expect_clean_scan("the quarantined block restored");
        for (int k = 0; k < TRIES; k++)
            if (blocks[k])
                CHECK_EQ_INT(FastMM_FreeMem(blocks[k]), 0);
        expect_clean_scan("after freeing the reuse blocks");
    }
    tu_events_reset();
}

/* ---- ScanRace --------------------------------------------------------------------------------- */

#define RACE_THREADS 4
#define RACE_SLOTS 48

static tu_atomic_long race_stop;
static tu_atomic_long race_operations;
/* The largest user size whose debug block is a small block. */
static size_t race_max_size;

static void race_worker(void *arg)
{
    unsigned index = (unsigned)(uintptr_t)arg;
    tu_rng rng;
    tu_rng_seed(&rng, SEED * 977 + index);
    uint8_t *slots[RACE_SLOTS] = {0};
    size_t sizes[RACE_SLOTS] = {0};
    uint64_t keys[RACE_SLOTS] = {0};
    uint64_t generation = 0;
    long operations = 0;
    while (!tu_atomic_load(&race_stop)) {
        unsigned s = (unsigned)tu_rng_below(&rng, RACE_SLOTS);
        if (slots[s]) {
            CHECK_PATTERN(slots[s], sizes[s], keys[s]);
            CHECK_EQ_INT(FastMM_FreeMem(slots[s]), 0);
            slots[s] = NULL;
        }
        size_t n = tu_rng_log_range(&rng, 1, race_max_size);
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        if (!tu_is_debug_block(p) || FastMM_BlockCurrentUserBytes(p) != n)
            CHECK_MSG(0, "thread %u: GetMem(%zu) gave %p, status %u, size %zu", index, n, (void *)p, tu_status_word(p),
                      FastMM_BlockCurrentUserBytes(p));
        keys[s] = tu_pattern_key(SEED, index * 1000003u + s, ++generation);
        tu_pattern_fill(p, n, keys[s]);
        slots[s] = p;
        sizes[s] = n;
        operations++;
    }
    for (unsigned s = 0; s < RACE_SLOTS; s++) {
        if (slots[s]) {
            CHECK_PATTERN(slots[s], sizes[s], keys[s]);
            CHECK_EQ_INT(FastMM_FreeMem(slots[s]), 0);
        }
    }
    tu_atomic_fetch_add(&race_operations, operations);
}

static void scan_race(void)
{
    SECTION("ScanRace: scanning while 4 threads churn small debug blocks");
    tu_events_reset();
    race_stop = 0;
    race_operations = 0;
    race_max_size = tu_debug_max_small_user(FastMM_GetDebugModeStackTraceEntryCount());
    tu_thread threads[RACE_THREADS];
    unsigned started = 0;
    for (unsigned t = 0; t < RACE_THREADS; t++) {
        threads[t] = tu_thread_start(race_worker, (void *)(uintptr_t)t, 0);
        if (CHECK(threads[t] != NULL))
            started++;
    }
    unsigned long long start = tu_ms();
    unsigned scans = 0, failed_scans = 0;
    while (tu_ms() - start < 2000) {
        int r = FastMM_ScanDebugBlocksForCorruption();
        scans++;
        if (r != 1) {
            failed_scans++;
            if (failed_scans <= 3) {
                char seen[700];
                describe_events(seen, sizeof seen);
                CHECK_MSG(0, "scan %u during the churn returned %d: %s", scans, r, seen);
            }
        }
    }
    tu_atomic_exchange(&race_stop, 1);
    for (unsigned t = 0; t < started; t++) {
        CHECK(tu_thread_join(threads[t], 60000));
    }
    tu_info("%u scans during %ld allocations by %u threads; %u scans reported something", scans,
            (long)race_operations, started, failed_scans);
    CHECK(scans >= 2);
    CHECK(race_operations > 0);
    CHECK_EQ_INT(failed_scans, 0);
    char seen[700];
    describe_events(seen, sizeof seen);
    CHECK_MSG(tu_events_total() == 0, "%ld events during the race: %s", (long)tu_events_total(), seen);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    expect_clean_scan("after the race");
}

/* ---- ScanHeaderBounds ------------------------------------------------------------------------- */

static void set_user_size(void *p, size_t size)
{
    memcpy(tu_debug_header(p) + TU_DEBUG_USER_SIZE_OFFSET, &size, sizeof size);
}

static void forge_header_checksum(void *p)
{
    tu_debug_set_header_u32(p, TU_DEBUG_CHECKSUM_OFFSET, tu_debug_expected_header_checksum(p));
}

/* Puts back only what the test changed (the field and the checksum): fm5 may keep state of its own in
 * the header of a block it reported, such as its quarantine. */
static void restore_field(void *p, const uint8_t *saved, unsigned offset, unsigned length)
{
    memcpy(tu_debug_header(p) + offset, saved + offset, length);
    memcpy(tu_debug_header(p) + TU_DEBUG_CHECKSUM_OFFSET, saved + TU_DEBUG_CHECKSUM_OFFSET, 4);
}

static void scan_header_bounds(void)
{
    static const size_t sizes[] = {100, 50000, 600000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        char title[96], where[160];
        snprintf(title, sizeof title, "ScanHeaderBounds: live %zu-byte block", n);
        SECTION(title);
        uint8_t *p = (uint8_t *)FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        uint8_t saved[TU_DEBUG_HEADER_SIZE];
        memcpy(saved, tu_debug_header(p), sizeof saved);
        const size_t bad_sizes[] = {n + 1, n - 1, n * 1000, SIZE_MAX / 2, SIZE_MAX - 32, SIZE_MAX};
        for (int forged = 0; forged < 2; forged++) {
            for (size_t k = 0; k < sizeof bad_sizes / sizeof bad_sizes[0]; k++) {
                /* A forged checksum with a size that still fits the block is a footer matter: only the
                 * sizes that cannot fit are required to be caught by the header check. */
                if (forged && bad_sizes[k] < n * 1000)
                    continue;
                set_user_size(p, bad_sizes[k]);
                if (forged)
                    forge_header_checksum(p);
                snprintf(where, sizeof where, "%zu bytes, user size %zu%s", n, bad_sizes[k],
                         forged ? " with a matching checksum" : "");
                expect_scan_report(p, FastMM_EventDebugBlockHeaderCorrupted, NULL, where);
                if (k == 2)
                    expect_refused_operations(p, n, FastMM_EventDebugBlockHeaderCorrupted, where);
                restore_field(p, saved, TU_DEBUG_USER_SIZE_OFFSET, sizeof(size_t));
                expect_clean_scan("user size restored");
            }
            static const unsigned bad_counts[] = {65, 100, 200, 255};
            for (size_t k = 0; k < sizeof bad_counts / sizeof bad_counts[0]; k++) {
                tu_debug_header(p)[TU_DEBUG_ENTRY_COUNT_OFFSET] = (uint8_t)bad_counts[k];
                if (forged)
                    forge_header_checksum(p);
                snprintf(where, sizeof where, "%zu bytes, stack trace entry count %u%s", n, bad_counts[k],
                         forged ? " with a matching checksum" : "");
                expect_scan_report(p, FastMM_EventDebugBlockHeaderCorrupted, NULL, where);
                if (k == 2)
                    expect_refused_operations(p, n, FastMM_EventDebugBlockHeaderCorrupted, where);
                restore_field(p, saved, TU_DEBUG_ENTRY_COUNT_OFFSET, 1);
                expect_clean_scan("entry count restored");
            }
        }
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        if (tu_expected_kind(n) == FastMM_LargeBlock)
            continue;

        /* The same on a freed block: one report, then it is out of circulation. */
        snprintf(title, sizeof title, "ScanHeaderBounds: freed %zu-byte block", n);
        SECTION(title);
        static const int freed_cases[] = {0, 1};
        for (size_t k = 0; k < 2; k++) {
            p = (uint8_t *)FastMM_GetMem(n);
            if (!CHECK(p != NULL))
                continue;
            CHECK_EQ_INT(FastMM_FreeMem(p), 0);
            memcpy(saved, tu_debug_header(p), sizeof saved);
            if (freed_cases[k] == 0)
                set_user_size(p, SIZE_MAX / 2);
            else
                tu_debug_header(p)[TU_DEBUG_ENTRY_COUNT_OFFSET] = 200;
            forge_header_checksum(p);
            snprintf(where, sizeof where, "freed %zu bytes, %s", n, k ? "entry count 200" : "huge user size");
            expect_scan_report(p, FastMM_EventDebugBlockHeaderCorrupted, NULL, where);
            if (freed_cases[k] == 0)
                restore_field(p, saved, TU_DEBUG_USER_SIZE_OFFSET, sizeof(size_t));
            else
                restore_field(p, saved, TU_DEBUG_ENTRY_COUNT_OFFSET, 1);
            expect_clean_scan("freed header restored");
        }
    }
    tu_events_reset();
}

int main(void)
{
    tu_init("test_debug_scan");
    CHECK(tu_events_install(TU_KEEP_ALL_EVENTS));
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    CHECK_EQ_SIZE(FastMM_GetDebugModeOptions(), TU_DEBUG_DEFAULT_OPTIONS);

    scan_coverage();
    modified_ranges();
    reuse_quarantine();
    scan_race();
    scan_header_bounds();

    SECTION("debug mode left as found");
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    CHECK_EQ_INT(FastMM_DebugModeActive(), 0);
    FastMM_SetEventCallback(NULL, NULL);
    return test_finish();
}
