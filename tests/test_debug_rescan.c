/*
 * test_debug_rescan — every corruption that exists at the time of a scan is reported by that scan,
 * however often the block was reported before:
 *   - freed debug blocks of every user size 1..70 and of 100, 1000, 2600 (small), 3000 and 20000
 *     (medium) bytes: for every byte of the user area, of the checksummed header and of the footer's
 *     checksummed part in turn, the byte is changed, a scan returns 0 with one event naming the block,
 *     the byte is restored and a scan returns 1 with no event;
 *   - the same for the header and footer bytes of live blocks of those sizes and of a large block;
 *   - repeated reports of unchanged damage are folded into one line ("still corrupted, unchanged")
 *     but still make the scan return 0, and a second change to the same block gets a full report;
 *   - a corrupted freed block met on reuse is quarantined (never handed out while corrupted, still
 *     reported by every scan, its bytes exactly as they were damaged) and, once restored, goes back
 *     into use, filled;
 *   - an intact freed block handed out again, for the same, a smaller or a slightly larger size around
 *     and above 32 KiB, holds the allocated fill in every byte.
 * Stack traces are 4 entries deep, so that the footers hold traces and the reports stay cheap.
 */
#include "test_util.h"

#define SEED 0x7E5CA9ull
#define TRACE_DEPTH 4u
#define MAX_PRINTED 8

static unsigned long missed, spurious, scans;

/* One scan; `corrupted` says whether exactly one event naming `p` and a 0 are expected, or a clean 1. */
static int scan_expect(int corrupted, const void *p, const char *what, size_t n, size_t position)
{
    tu_events_reset();
    scans++;
    int result = FastMM_ScanDebugBlocksForCorruption();
    int kind = 0;
    const void *named = NULL;
    tu_events_last(&kind, &named, NULL, NULL, 0);
    long events = tu_events_total();
    int ok = corrupted ? result == 0 && events == 1 && named == p : result == 1 && events == 0;
    if (!ok) {
        unsigned long *count = corrupted ? &missed : &spurious;
        if (++*count <= MAX_PRINTED)
            CHECK_MSG(0, "%zu-byte block %p, %s byte %zu %s: scan returned %d with %ld events (last names %p)", n, p,
                      what, position, corrupted ? "changed" : "restored", result, (long)events, named);
    }
    return ok;
}

/* Changes each byte of [from, from + count) in turn, scanning while it is changed and once it is back. */
static void sweep_bytes(uint8_t *p, size_t n, uint8_t *from, size_t count, const char *what)
{
    for (size_t i = 0; i < count; i++) {
        from[i] ^= 0x21;
        scan_expect(1, p, what, n, i);
        from[i] ^= 0x21;
        scan_expect(0, p, what, n, i);
    }
}

/* The bytes of the header that its checksum covers (from the checksum field on) and of the footer's
 * checksum and traces (the footer's last word is reserved and unchecked, as in FastMM5). */
static void sweep_header_and_footer(uint8_t *p, size_t n)
{
    sweep_bytes(p, n, tu_debug_header(p) + TU_DEBUG_CHECKSUM_OFFSET, TU_DEBUG_HEADER_SIZE - TU_DEBUG_CHECKSUM_OFFSET,
                "header");
    sweep_bytes(p, n, tu_debug_footer(p), tu_debug_footer_size(tu_debug_entry_count(p)) - 4, "footer");
}

static const size_t larger_sizes[] = {100, 1000, 2600, 3000, 20000};

/* A freed block of n bytes with a live neighbour on either side, which keep it where it is (nothing
 * merges with it or reuses it while the test changes and restores it). 0 if an allocation failed. */
static int free_between_live_neighbours(size_t n, void **left, uint8_t **freed, void **right)
{
    *left = FastMM_GetMem(n);
    *freed = FastMM_GetMem(n);
    *right = FastMM_GetMem(n);
    if (!CHECK(*left && *freed && *right))
        return 0;
    return CHECK_EQ_INT(FastMM_FreeMem(*freed), 0);
}

static void freed_blocks(void)
{
    SECTION("freed blocks: every byte changed, scanned, restored, scanned");
    unsigned long before = missed + spurious;
    size_t count = 70 + sizeof larger_sizes / sizeof larger_sizes[0];
    for (size_t i = 0; i < count; i++) {
        size_t n = i < 70 ? i + 1 : larger_sizes[i - 70];
        uint8_t *p;
        void *left, *right;
        if (!free_between_live_neighbours(n, &left, &p, &right))
            continue;
        scan_expect(0, p, "untouched", n, 0);
        sweep_bytes(p, n, p, n, "user");
        sweep_header_and_footer(p, n);
        CHECK_EQ_INT(FastMM_FreeMem(left), 0);
        CHECK_EQ_INT(FastMM_FreeMem(right), 0);
    }
    CHECK_MSG(missed + spurious == before, "freed blocks: %lu corruptions missed, %lu clean scans failed", missed,
              spurious);
}

static void live_blocks(void)
{
    SECTION("live blocks: every header and footer byte changed, scanned, restored, scanned");
    unsigned long before = missed + spurious;
    size_t count = 70 + sizeof larger_sizes / sizeof larger_sizes[0] + 1;
    for (size_t i = 0; i < count; i++) {
        size_t n = i < 70 ? i + 1 : i < count - 1 ? larger_sizes[i - 70] : 600000;
        uint8_t *p = FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        uint64_t key = tu_pattern_key(SEED, i, 0);
        tu_pattern_fill(p, n, key);
        sweep_header_and_footer(p, n);
        CHECK_PATTERN(p, n, key);
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }
    CHECK_MSG(missed + spurious == before, "live blocks: %lu corruptions missed, %lu clean scans failed", missed,
              spurious);
}

/* The last event's text, for the folding checks. */
static void last_text(char *text, size_t size)
{
    int kind;
    tu_events_last(&kind, NULL, NULL, text, size);
}

static void folded_reports(void)
{
    SECTION("unchanged damage: folded into one line, still a failed scan; new damage: a full report");
    static const size_t sizes[] = {40, 5000};
    for (size_t i = 0; i < 2; i++) {
        size_t n = sizes[i];
        uint8_t *p;
        void *left, *right;
        if (!free_between_live_neighbours(n, &left, &p, &right))
            continue;
        char text[TU_EVENT_TEXT];
        p[n / 2] ^= 0x01;
        scan_expect(1, p, "first scan, user", n, n / 2);
        last_text(text, sizeof text);
        CHECK_MSG(strstr(text, "Modified bytes at offsets") != NULL, "%zu bytes: first report: %s", n, text);
        for (int k = 0; k < 3; k++) {
            scan_expect(1, p, "repeated scan, user", n, n / 2);
            last_text(text, sizeof text);
            CHECK_MSG(strstr(text, "still corrupted, unchanged") != NULL, "%zu bytes: repeated report: %s", n, text);
        }
        p[n / 4] ^= 0x02;
        scan_expect(1, p, "second change, user", n, n / 4);
        last_text(text, sizeof text);
        CHECK_MSG(strstr(text, "Modified bytes at offsets") != NULL && strstr(text, "still corrupted") == NULL,
                  "%zu bytes: report of the changed damage: %s", n, text);
        p[n / 2] ^= 0x01;
        p[n / 4] ^= 0x02;
        scan_expect(0, p, "both restored, user", n, 0);
        CHECK_EQ_INT(FastMM_FreeMem(left), 0);
        CHECK_EQ_INT(FastMM_FreeMem(right), 0);
    }
}

/* Whether the freed block at p still holds exactly the freed fill after its marker slot, but for the
 * byte at `changed`: the check that refused it must leave it as it was found. */
static void expect_freed_content(const uint8_t *p, size_t n, size_t changed, uint8_t changed_value)
{
    size_t first_wrong = SIZE_MAX;
    for (size_t i = sizeof(void *); i < n && first_wrong == SIZE_MAX; i++)
        if (p[i] != (i == changed ? changed_value : 0x80))
            first_wrong = i;
    CHECK_MSG(first_wrong == SIZE_MAX, "%zu bytes, byte %zu changed: the quarantined block's byte %zu is 0x%02x", n,
              changed, first_wrong, first_wrong == SIZE_MAX ? 0 : p[first_wrong]);
}

static void reuse_quarantine(void)
{
    SECTION("a corrupted freed block met on reuse: quarantined, rescanned, back in use once restored");
    /* Small and medium blocks, up to 64 KiB and beyond (where the allocated fill runs from the end
     * down), changed in the first unit, in the middle, and in the last (unaligned) bytes. */
    static const struct {
        size_t n, position;
    } cases[] = {{200, 10}, {7000, 10}, {40000, 10}, {40000, 20001}, {40000, 39999}, {65536, 65535}, {70001, 35000}};
    enum { TRIES = 64 };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = cases[i].n, position = cases[i].position;
        uint8_t *p = FastMM_GetMem(n);
        if (!CHECK(p != NULL))
            continue;
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
        p[position] ^= 0x40;
        void *blocks[TRIES];
        int handed_out = 0;
        tu_events_reset();
        for (int k = 0; k < TRIES; k++) {
            blocks[k] = FastMM_GetMem(n);
            handed_out |= blocks[k] == p;
        }
        CHECK_MSG(!handed_out, "%zu bytes: the corrupted freed block was handed out", n);
        CHECK_MSG(tu_events_count(FastMM_EventFreedBlockModified) == 1,
                  "%zu bytes: %ld FreedBlockModified events while allocating, expected the one on reuse", n,
                  (long)tu_events_count(FastMM_EventFreedBlockModified));
        expect_freed_content(p, n, position, 0x80 ^ 0x40);
        for (int k = 0; k < 2; k++)
            scan_expect(1, p, "quarantined, user", n, position);
        p[position] ^= 0x40;
        scan_expect(0, p, "quarantined, restored, user", n, position);
        void *again[TRIES];
        int back = 0;
        for (int k = 0; k < TRIES; k++) {
            again[k] = FastMM_GetMem(n);
            back |= again[k] == p;
        }
        CHECK_MSG(back, "%zu bytes: the restored block did not go back into use", n);
        /* Handed out again, it holds the allocated fill like any new debug block. */
        for (int k = 0; k < TRIES; k++)
            if (again[k] == p) {
                size_t bad = 0;
                CHECK_MSG(tu_all_bytes_equal(p, n, 0x90, &bad), "%zu bytes: the block back in use has 0x%02x at %zu", n,
                          p[bad], bad);
            }
        for (int k = 0; k < TRIES; k++) {
            CHECK_EQ_INT(FastMM_FreeMem(blocks[k]), 0);
            CHECK_EQ_INT(FastMM_FreeMem(again[k]), 0);
        }
        scan_expect(0, p, "after freeing everything", n, 0);
    }
}

/* An intact freed block handed out again holds the allocated fill everywhere, also when the new block
 * is smaller or a little larger than the freed one, around the size where the allocated fill starts to
 * run from the end down. */
static void reuse_fill(void)
{
    SECTION("an intact freed block handed out again: all 0x90, smaller and larger reuses too");
    static const size_t sizes[] = {32767, 32768, 32769, 40000, 65536, 70001};
    static const long deltas[] = {0, -100, -1, 1, 24};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t d = 0; d < sizeof deltas / sizeof deltas[0]; d++) {
            size_t n = sizes[i], m = (size_t)((long)n + deltas[d]);
            uint8_t *p = FastMM_GetMem(n);
            if (!CHECK(p != NULL))
                continue;
            tu_pattern_fill(p, n, tu_pattern_key(SEED, i, d));
            CHECK_EQ_INT(FastMM_FreeMem(p), 0);
            uint8_t *q = FastMM_GetMem(m);
            if (!CHECK(q != NULL))
                continue;
            size_t bad = 0;
            CHECK_MSG(tu_all_bytes_equal(q, m, 0x90, &bad), "%zu bytes freed, %zu allocated%s: 0x%02x at %zu", n, m,
                      q == p ? " (the same block)" : "", q[bad], bad);
            CHECK_EQ_INT(FastMM_FreeMem(q), 0);
        }
}

int main(void)
{
    tu_init("test_debug_rescan");
    tu_events_install(TU_KEEP_LAST_EVENT);
    CHECK_EQ_INT(FastMM_SetDebugModeStackTraceEntryCount(TRACE_DEPTH), 0);
    FastMM_EnterDebugMode();
    unsigned long long started = tu_ms();
    freed_blocks();
    live_blocks();
    folded_reports();
    reuse_quarantine();
    reuse_fill();
    tu_info("%lu scans: %lu corruptions missed, %lu clean scans failed, %llu ms", scans, missed, spurious,
            tu_ms() - started);
    FastMM_ExitDebugMode();
    return test_finish();
}
