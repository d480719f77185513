/*
 * test_debug_patterns — the building blocks of debug mode, in isolation, on memory from VirtualAlloc
 * (never from fm5, so that nothing here depends on debug mode being wired into the allocator):
 *   - layout: the debug header is 64 bytes with FastMM5's offsets, the footer is 2N pointers + 8 bytes
 *     and sits right after the user data, the outer block size saturates instead of wrapping;
 *   - checksums: each matches an independent computation; flipping any single bit of a checksummed
 *     header word or of either trace changes it, flipping any other bit does not;
 *   - allocated fill: sizes 0..1025 at every misalignment 0..15 become 0x90, and no byte around them
 *     changes;
 *   - freed fill: sizes 0..1025 at every misalignment get the freed-object marker in their first
 *     pointer exactly when they are at least two pointers long (on Win32 the slot's second dword is
 *     0x80808080), 0x80 everywhere else, guards intact, and the checker and a byte loop both call the
 *     result intact;
 *   - the freed-object table: the marker is a table of 75 callable entries, each calling the hook with
 *     its own index and returning 0; the default hook reports an invalid-argument event;
 *   - seed 000 (FastMM5 PR #96): for freed sizes 1..65 and 257, each byte in turn XORed with 0x01 and
 *     set to 0x00 is caught by the checker and described as exactly "offset(1)", and the block is
 *     intact again once restored;
 *   - seed 001 (FastMM5 PR #97): the checker agrees with a plain byte loop for sizes 1..600, clean and
 *     with every byte position corrupted, at every misalignment 0..15;
 *   - edges: every routine run on blocks that end at, or start at, an inaccessible page reads and
 *     writes nothing outside the block (a stray access would crash the test);
 *   - description: separate corruptions give one range each, in order, adjacent bytes merge (also
 *     across the end of the marker slot), more than 32 give exactly 32, truncation keeps the count.
 */
#include "test_util.h"

/* The routines under test are internal (the DLL exports only the public API), so their sources are
 * compiled into this program. In the NASM build the routines' own names are the asm routines, linked
 * from fm5_asm_routines, and the C sources below provide their twins and what they call. */
#if TU_WINDOWS
#include "../src/base/os_windows.c"
#else
#include "../src/base/os_posix.c"
#endif
#include "../src/base/os_common.c"
#include "../src/base/address_map.c"
#include "../src/debug/debug_fill.c"
#include "../src/debug/debug_freed_check.c"
#include "../src/debug/debug_freed_object.c"
#include "../src/base/text_builder.c"

#define SEED 0xDEB6ull

/* ---------------------------------------------------------------------------------------------- */
/* debug_freed_object.c reports through fm5's event machinery, which lives in the DLL unexported; this
 * stand-in records the report instead. */

static tu_atomic_long reported_events;
static int reported_kind;
static const char *reported_detail;

void fm5_event_report(int kind, const void *pointer, size_t size, const char *detail)
{
    (void)pointer;
    (void)size;
    reported_kind = kind;
    reported_detail = detail;
    tu_atomic_increment(&reported_events);
}

/* ---------------------------------------------------------------------------------------------- */
/* Memory: one read-write window between two inaccessible pages. A case puts its block in the window with
 * GUARD_BYTES of known content on each side. */

#define PAGE 4096u
#define WINDOW_PAGES 4u
#define WINDOW_BYTES (WINDOW_PAGES * PAGE)
#define GUARD_BYTES 64u
#define GUARD_BYTE 0xA5u
#define BLOCK_OFFSET 1024u /* where a case's block starts in the window, before its misalignment */

static uint8_t *window; /* WINDOW_BYTES readable, with no-access pages before and after */

static int window_create(void)
{
    uint8_t *base = (uint8_t *)tu_os_reserve_inaccessible(NULL, WINDOW_BYTES + 2 * PAGE);
    if (!base || !tu_os_set_access(base + PAGE, WINDOW_BYTES, 1))
        return 0;
    window = base + PAGE;
    return 1;
}

/* A block of `size` bytes at BLOCK_OFFSET + misalignment, filled with `content`, between guards. */
static uint8_t *block_prepare(size_t size, unsigned misalignment, uint8_t content)
{
    uint8_t *user = window + BLOCK_OFFSET + misalignment;
    memset(user - GUARD_BYTES, GUARD_BYTE, GUARD_BYTES);
    memset(user, content, size);
    memset(user + size, GUARD_BYTE, GUARD_BYTES);
    return user;
}

static int guards_intact(const uint8_t *user, size_t size)
{
    size_t bad;
    return tu_all_bytes_equal(user - GUARD_BYTES, GUARD_BYTES, GUARD_BYTE, &bad) &&
           tu_all_bytes_equal(user + size, GUARD_BYTES, GUARD_BYTE, &bad);
}

/* ---------------------------------------------------------------------------------------------- */
/* What a freed block must hold, written from the specification rather than from the code under test. */

#define OBJECT_MINIMUM_SIZE (2u * sizeof(void *)) /* 8 on Win32, 16 on Win64 */

static uint8_t expected_freed_byte(size_t size, size_t offset)
{
    if (size >= OBJECT_MINIMUM_SIZE && offset < sizeof(void *)) {
        const void *marker = fm5_freed_object_marker();
        uint8_t bytes[sizeof marker];
        memcpy(bytes, &marker, sizeof marker);
        return bytes[offset];
    }
    return 0x80;
}

/* The reference for seed 001: one byte at a time, no cleverness. */
static int reference_freed_intact(const uint8_t *user, size_t size)
{
    int intact = 1;
    for (size_t i = 0; i < size; i++)
        intact &= user[i] == expected_freed_byte(size, i);
    return intact;
}

/* Returns the offset of the first byte that differs from a freed block's content, or SIZE_MAX. */
static size_t first_unexpected_freed_byte(const uint8_t *user, size_t size)
{
    for (size_t i = 0; i < size; i++)
        if (user[i] != expected_freed_byte(size, i))
            return i;
    return SIZE_MAX;
}

/* ---------------------------------------------------------------------------------------------- */

static void layout(void)
{
    SECTION("debug block layout");
    CHECK_EQ_SIZE(sizeof(fm5_debug_block_header), 64);
    CHECK_EQ_SIZE(FM5_DEBUG_HEADER_SIZE, 64);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, header_checksum), TU_64BIT ? 20 : 28);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, allocation_tick_count), TU_64BIT ? 24 : 32);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, allocation_number), TU_64BIT ? 28 : 36);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, user_size), TU_64BIT ? 32 : 40);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, previously_used_by_class), TU_64BIT ? 40 : 44);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, allocation_group), 48);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, allocated_by_thread), 52);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, freed_by_thread), 56);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, stack_trace_entry_count), 61);
    CHECK_EQ_SIZE(offsetof(fm5_debug_block_header, flags), 62);
    CHECK_EQ_INT(FM5_DEBUG_BLOCK_IN_USE, 32);
    CHECK_EQ_INT(FM5_DEBUG_BLOCK_FREED, 33);
    CHECK_EQ_INT(FM5_DEBUG_ALLOCATED_FILL_BYTE, 0x90);
    CHECK_EQ_INT(FM5_DEBUG_FREED_FILL_BYTE, 0x80);

    size_t footer_mismatches = 0;
    for (unsigned n = 0; n <= FM5_DEBUG_MAXIMUM_STACK_TRACE_ENTRIES; n++) {
        size_t expected = 2 * n * sizeof(void *) + 8;
        footer_mismatches += fm5_debug_footer_size(n) != expected;
        footer_mismatches += fm5_debug_outer_block_size(100, n) != 64 + 100 + expected;
        footer_mismatches += fm5_debug_footer_trace_offset(n, FM5_DEBUG_ALLOCATION_TRACE) != 4;
        footer_mismatches += fm5_debug_footer_trace_offset(n, FM5_DEBUG_FREE_TRACE) != 4 + n * sizeof(void *);
        footer_mismatches += fm5_debug_footer_reserved_offset(n) != expected - 4;
    }
    CHECK_EQ_SIZE(footer_mismatches, 0);
    CHECK_EQ_SIZE(fm5_debug_footer_size(20), TU_64BIT ? 328 : 168);
    CHECK_EQ_SIZE(fm5_debug_outer_block_size(SIZE_MAX - 10, 20), SIZE_MAX);
    CHECK_EQ_SIZE(fm5_debug_outer_block_size(SIZE_MAX - 64 - 328, 20), TU_64BIT ? SIZE_MAX : SIZE_MAX - 160);

    fm5_debug_block_header *header = (fm5_debug_block_header *)window;
    memset(header, 0, sizeof *header);
    header->user_size = 37;
    CHECK_EQ_PTR(fm5_debug_user_data(header), window + 64);
    CHECK_EQ_PTR(fm5_debug_header_of(window + 64), header);
    CHECK_EQ_PTR(fm5_debug_footer(header), window + 64 + 37);
    /* The flags are the user block's status word. */
    header->flags = FM5_DEBUG_BLOCK_FREED;
    CHECK_EQ_INT(*fm5_status_word(fm5_debug_user_data(header)), 33);
}

static uint32_t reference_checksum(const uint8_t *from, size_t bytes)
{
    uint32_t checksum = 0xFFFFFFFFu;
    for (size_t i = 0; i < bytes; i += 4) {
        uint32_t word = (uint32_t)from[i] | (uint32_t)from[i + 1] << 8 | (uint32_t)from[i + 2] << 16 |
                        (uint32_t)from[i + 3] << 24;
        checksum ^= word;
    }
    return checksum;
}

static void checksums(void)
{
    SECTION("header and footer checksums");
    tu_rng rng;
    tu_rng_seed(&rng, SEED);

    /* Header: the words after the checksum field (from 24 on Win64, 32 on Win32) up to 64. */
    const size_t covered_from = TU_64BIT ? 24 : 32;
    fm5_debug_block_header header;
    uint8_t *bytes = (uint8_t *)&header;
    for (size_t i = 0; i < sizeof header; i++)
        bytes[i] = (uint8_t)tu_rng_next(&rng);
    uint32_t original = fm5_debug_header_checksum(&header);
    CHECK_EQ_SIZE(original, reference_checksum(bytes + covered_from, 64 - covered_from));
    size_t wrong = 0, changed = 0;
    for (size_t bit = 0; bit < 64 * 8; bit++) {
        bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int differs = fm5_debug_header_checksum(&header) != original;
        bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        changed += differs;
        if (differs != (bit / 8 >= covered_from) && !wrong++)
            tu_info("header bit %zu: checksum %s", bit, differs ? "changed" : "did not change");
    }
    CHECK_EQ_SIZE(wrong, 0);
    CHECK_EQ_SIZE(changed, (64 - covered_from) * 8);

    /* Footer: both traces, at unaligned addresses, for several entry counts. */
    static const unsigned entry_counts[] = {0, 1, 2, 3, 20, 63, 64};
    for (size_t c = 0; c < sizeof entry_counts / sizeof entry_counts[0]; c++) {
        unsigned n = entry_counts[c];
        size_t footer_size = fm5_debug_footer_size(n);
        uint8_t *footer = window + 1 + c; /* misaligned by 1..7 */
        for (size_t i = 0; i < footer_size; i++)
            footer[i] = (uint8_t)tu_rng_next(&rng);
        /* The accessors round-trip at any alignment. */
        int round_trip = 1;
        for (unsigned i = 0; i < n; i++) {
            void *a = (void *)(uintptr_t)tu_rng_next(&rng), *f = (void *)(uintptr_t)tu_rng_next(&rng);
            fm5_debug_footer_store_trace_entry(footer, n, FM5_DEBUG_ALLOCATION_TRACE, i, a);
            fm5_debug_footer_store_trace_entry(footer, n, FM5_DEBUG_FREE_TRACE, i, f);
            round_trip &= fm5_debug_footer_load_trace_entry(footer, n, FM5_DEBUG_ALLOCATION_TRACE, i) == a;
            round_trip &= fm5_debug_footer_load_trace_entry(footer, n, FM5_DEBUG_FREE_TRACE, i) == f;
            round_trip &= memcmp(footer + 4 + i * sizeof(void *), &a, sizeof a) == 0;
            round_trip &= memcmp(footer + 4 + (n + i) * sizeof(void *), &f, sizeof f) == 0;
        }
        CHECK_MSG(round_trip, "trace entries do not round-trip, %u entries", n);
        fm5_debug_footer_store_checksum(footer, 0x12345678u);
        CHECK_EQ_SIZE(fm5_debug_footer_load_checksum(footer), 0x12345678u);

        uint32_t footer_original = fm5_debug_footer_checksum(footer, n);
        CHECK_EQ_SIZE(footer_original, reference_checksum(footer + 4, 2 * n * sizeof(void *)));
        wrong = changed = 0;
        for (size_t bit = 0; bit < footer_size * 8; bit++) {
            size_t byte = bit / 8;
            footer[byte] ^= (uint8_t)(1u << (bit % 8));
            int differs = fm5_debug_footer_checksum(footer, n) != footer_original;
            footer[byte] ^= (uint8_t)(1u << (bit % 8));
            changed += differs;
            int covered = byte >= 4 && byte < 4 + 2 * n * sizeof(void *);
            if (differs != covered && !wrong++)
                tu_info("footer of %u entries, bit %zu: checksum %s", n, bit, differs ? "changed" : "did not change");
        }
        CHECK_MSG(wrong == 0, "%zu footer bits of %u entries misjudged", wrong, n);
        CHECK_EQ_SIZE(changed, 2 * n * sizeof(void *) * 8);
    }
    CHECK_EQ_SIZE(fm5_debug_footer_checksum(window, 0), 0xFFFFFFFFu);
}

static void allocated_fill(void)
{
    SECTION("allocated fill, sizes 0..1025, misalignments 0..15");
    size_t cases = 0;
    for (size_t size = 0; size <= 1025; size++) {
        int ok = 1;
        for (unsigned misalignment = 0; misalignment < 16; misalignment++) {
            uint8_t *user = block_prepare(size, misalignment, 0x00);
            fm5_debug_fill_allocated(user, size);
            size_t bad = 0;
            int filled = tu_all_bytes_equal(user, size, 0x90, &bad);
            int guarded = guards_intact(user, size);
            cases++;
            if (ok && !(filled && guarded))
                tu_info("size %zu, misalignment %u: %s", size, misalignment,
                        !filled ? "a byte is not 0x90" : "a guard byte changed");
            ok &= filled && guarded;
        }
        CHECK_MSG(ok, "allocated fill of %zu bytes", size);
    }
    tu_info("%zu fills checked", cases);
}

static void freed_fill(void)
{
    SECTION("freed fill, sizes 0..1025, misalignments 0..15");
    size_t cases = 0, with_marker = 0;
    for (size_t size = 0; size <= 1025; size++) {
        int ok = 1;
        for (unsigned misalignment = 0; misalignment < 16; misalignment++) {
            uint8_t *user = block_prepare(size, misalignment, 0x00);
            fm5_debug_fill_freed(user, size);
            size_t bad = first_unexpected_freed_byte(user, size);
            int guarded = guards_intact(user, size);
            int checked = fm5_debug_freed_pattern_intact(user, size);
            int referenced = reference_freed_intact(user, size);
            if (size >= OBJECT_MINIMUM_SIZE) {
                const void *first_pointer;
                memcpy(&first_pointer, user, sizeof first_pointer);
                ok &= first_pointer == fm5_freed_object_marker();
                if (!TU_64BIT)
                    ok &= memcmp(user + 4, "\x80\x80\x80\x80", 4) == 0;
                with_marker++;
            }
            cases++;
            if (ok && !(bad == SIZE_MAX && guarded && checked && referenced))
                tu_info("size %zu, misalignment %u: first wrong byte %lld, guards %d, checker %d", size,
                        misalignment, bad == SIZE_MAX ? -1ll : (long long)bad, guarded, checked);
            ok &= bad == SIZE_MAX && guarded && checked && referenced;
        }
        CHECK_MSG(ok, "freed fill of %zu bytes", size);
    }
    tu_info("%zu fills checked, %zu with the freed-object marker", cases, with_marker);
    /* The boundary, explicitly: one byte short of two pointers gets no marker. */
    uint8_t *user = block_prepare(OBJECT_MINIMUM_SIZE - 1, 0, 0x00);
    fm5_debug_fill_freed(user, OBJECT_MINIMUM_SIZE - 1);
    size_t bad;
    CHECK(tu_all_bytes_equal(user, OBJECT_MINIMUM_SIZE - 1, 0x80, &bad));
}

/* ---------------------------------------------------------------------------------------------- */

static unsigned recorded_indexes[FM5_FREED_OBJECT_VIRTUAL_METHOD_COUNT + 1];
static unsigned recorded_count;

static void record_virtual_call(unsigned virtual_method_index)
{
    if (recorded_count < sizeof recorded_indexes / sizeof recorded_indexes[0])
        recorded_indexes[recorded_count] = virtual_method_index;
    recorded_count++;
}

static void freed_object_table(void)
{
    SECTION("freed-object table");
    const fm5_freed_object_method *table = (const fm5_freed_object_method *)fm5_freed_object_marker();
    CHECK_EQ_PTR(table, fm5_freed_object_class_table.virtual_methods);
    CHECK(fm5_freed_object_class_table.reserved_for_type_information[0] == NULL &&
          fm5_freed_object_class_table.reserved_for_type_information[1] == NULL);
    int distinct = 1;
    for (unsigned i = 0; i < FM5_FREED_OBJECT_VIRTUAL_METHOD_COUNT; i++)
        for (unsigned j = 0; j < i; j++)
            distinct &= table[i] != NULL && table[i] != table[j];
    CHECK(distinct);

    /* Calls as a C++ program makes them through a dangling object pointer: class pointer first, then
     * the entry. */
    uint8_t *object = block_prepare(48, 0, 0x00);
    fm5_debug_fill_freed(object, 48);
    const fm5_freed_object_method *class_pointer;
    memcpy(&class_pointer, object, sizeof class_pointer);
    CHECK_EQ_PTR(class_pointer, table);

    fm5_freed_object_call_handler saved = fm5_freed_object_call_hook;
    fm5_freed_object_call_hook = record_virtual_call;
    recorded_count = 0;
    int all_zero = 1, in_order = 1;
    for (unsigned i = 0; i < FM5_FREED_OBJECT_VIRTUAL_METHOD_COUNT; i++) {
        all_zero &= class_pointer[i]() == 0;
        in_order &= recorded_count == i + 1 && recorded_indexes[i] == i;
    }
    CHECK_EQ_INT(recorded_count, FM5_FREED_OBJECT_VIRTUAL_METHOD_COUNT);
    CHECK(all_zero);
    CHECK(in_order);
    CHECK_EQ_INT(reported_events, 0);

    /* The default reports an event; NULL also means the default. */
    fm5_freed_object_call_hook = saved;
    CHECK_EQ_INT(class_pointer[74](), 0);
    CHECK_EQ_INT(reported_events, 1);
    CHECK_EQ_INT(reported_kind, FastMM_EventVirtualCallOnFreedObject);
    CHECK(reported_detail != NULL && strstr(reported_detail, "freed object") != NULL);
    fm5_freed_object_call_hook = NULL;
    CHECK_EQ_INT(class_pointer[0](), 0);
    CHECK_EQ_INT(reported_events, 2);
    fm5_freed_object_call_hook = saved;
    CHECK(fm5_debug_freed_pattern_intact(object, 48));
}

/* ---------------------------------------------------------------------------------------------- */

static void seed_000_corruption(void)
{
    SECTION("seed 000: every byte of freed sizes 1..65 and 257 corrupted in turn");
    size_t corruptions = 0, no_change = 0;
    /* 1..65 reach every tail combination around the 32-byte loop and the marker; 257 runs the loop. */
    for (size_t size_index = 0; size_index < 66; size_index++) {
        size_t block_size = size_index < 65 ? size_index + 1 : 257;
        uint8_t *user = block_prepare(block_size, 0, 0x00);
        fm5_debug_fill_freed(user, block_size);
        if (!CHECK_MSG(fm5_debug_freed_pattern_intact(user, block_size), "fresh freed block of %zu", block_size))
            continue;
        for (size_t offset = 0; offset < block_size; offset++) {
            uint8_t original = user[offset];
            const uint8_t replacements[2] = {(uint8_t)(original ^ 0x01), 0x00};
            for (int r = 0; r < 2; r++) {
                if (replacements[r] == original) {
                    no_change++; /* a marker byte that is 0 already: setting it to 0 corrupts nothing */
                    continue;
                }
                user[offset] = replacements[r];
                corruptions++;
                CHECK_MSG(!fm5_debug_freed_pattern_intact(user, block_size), "size %zu, byte %zu = 0x%02x missed",
                          block_size, offset, replacements[r]);
                char text[64], expected[32];
                unsigned ranges = fm5_debug_describe_freed_corruption(user, block_size, text, sizeof text);
                snprintf(expected, sizeof expected, "%zu(1)", offset);
                CHECK_MSG(ranges == 1 && strcmp(text, expected) == 0,
                          "size %zu, byte %zu = 0x%02x: %u ranges \"%s\", expected \"%s\"", block_size, offset,
                          replacements[r], ranges, text, expected);
                user[offset] = original;
                CHECK_MSG(fm5_debug_freed_pattern_intact(user, block_size), "size %zu after restoring byte %zu",
                          block_size, offset);
            }
        }
        CHECK(guards_intact(user, block_size));
    }
    tu_info("%zu corruptions detected and described; %zu zero bytes of the marker left as they were",
            corruptions, no_change);
}

static void seed_001_isolation(void)
{
    SECTION("seed 001: checker against a byte loop, sizes 1..600, misalignments 0..15");
    unsigned long long cases = 0, disagreements = 0, corrupted_cases = 0;
    for (size_t size = 1; size <= 600; size++) {
        unsigned long long before = disagreements;
        for (unsigned misalignment = 0; misalignment < 16; misalignment++) {
            uint8_t *user = block_prepare(size, misalignment, 0x00);
            fm5_debug_fill_freed(user, size);
            int verdict = fm5_debug_freed_pattern_intact(user, size);
            int reference = reference_freed_intact(user, size);
            cases++;
            if (verdict != reference || !verdict) {
                if (!disagreements++)
                    tu_info("clean, size %zu, misalignment %u: checker %d, reference %d", size, misalignment,
                            verdict, reference);
            }
            for (size_t offset = 0; offset < size; offset++) {
                uint8_t original = user[offset];
                /* A different bit at each position, so that every bit of every lane is exercised. */
                user[offset] = (uint8_t)(original ^ (1u << ((offset + misalignment) % 8)));
                verdict = fm5_debug_freed_pattern_intact(user, size);
                reference = reference_freed_intact(user, size);
                user[offset] = original;
                cases++;
                corrupted_cases++;
                if ((verdict != reference || verdict) && !disagreements++)
                    tu_info("byte %zu of %zu corrupted, misalignment %u: checker %d, reference %d", offset, size,
                            misalignment, verdict, reference);
            }
            if (!guards_intact(user, size) && !disagreements++)
                tu_info("size %zu, misalignment %u: a guard byte changed", size, misalignment);
        }
        CHECK_MSG(disagreements == before, "size %zu: %llu disagreements", size, disagreements - before);
    }
    tu_info("%llu cases checked (%llu with a corrupted byte), %llu disagreements", cases, corrupted_cases,
            disagreements);
    CHECK_EQ_SIZE(cases, 16ull * (600 + 600 * 601 / 2));
}

/* A block flush against an inaccessible page: any read or write past it faults and ends the test. */
static void page_edges(void)
{
    SECTION("blocks touching an inaccessible page, sizes 0..1025");
    size_t runs = 0;
    for (size_t size = 0; size <= 1025; size++) {
        uint8_t *placements[2] = {window + WINDOW_BYTES - size, window};
        for (int p = 0; p < 2; p++) {
            uint8_t *user = placements[p];
            fm5_debug_fill_allocated(user, size);
            fm5_debug_fill_freed(user, size);
            int intact = fm5_debug_freed_pattern_intact(user, size);
            char text[16];
            unsigned clean_ranges = fm5_debug_describe_freed_corruption(user, size, text, sizeof text);
            unsigned ranges = 1;
            if (size) {
                user[size - 1] ^= 0x40;
                ranges = fm5_debug_describe_freed_corruption(user, size, text, sizeof text);
                intact &= !fm5_debug_freed_pattern_intact(user, size);
                user[size - 1] ^= 0x40;
            }
            runs++;
            CHECK_MSG(intact && clean_ranges == 0 && ranges == 1, "size %zu at the %s of the window", size,
                      p ? "start" : "end");
        }
    }
    tu_info("%zu blocks at a page edge", runs);
}

static void multi_range_description(void)
{
    SECTION("describing several corrupted ranges");
    const size_t size = 1000;
    char text[1024];
    uint8_t *user = block_prepare(size, 0, 0x00);
    fm5_debug_fill_freed(user, size);
    CHECK_EQ_INT(fm5_debug_describe_freed_corruption(user, size, text, sizeof text), 0);
    CHECK_EQ_INT(strlen(text), 0);

    /* 6..9 straddles the end of the marker slot on both architectures (slot 0..7; the pointer is 0..3
     * on Win32 and 0..7 on Win64). */
    static const size_t corrupted[][2] = {{6, 4}, {20, 3}, {100, 1}, {500, 8}, {999, 1}};
    for (size_t r = 0; r < 5; r++)
        for (size_t i = 0; i < corrupted[r][1]; i++)
            user[corrupted[r][0] + i] ^= 0x10;
    CHECK(!fm5_debug_freed_pattern_intact(user, size));
    unsigned ranges = fm5_debug_describe_freed_corruption(user, size, text, sizeof text);
    CHECK_EQ_INT(ranges, 5);
    CHECK_MSG(strcmp(text, "6(4) 20(3) 100(1) 500(8) 999(1)") == 0, "got \"%s\"", text);

    /* 40 separate single bytes: the first 32 are described. */
    fm5_debug_fill_freed(user, size);
    char expected[1024];
    size_t expected_length = 0;
    for (size_t k = 0; k < 40; k++) {
        size_t offset = 16 + 3 * k;
        user[offset] = 0x7F;
        if (k < 32)
            expected_length += (size_t)snprintf(expected + expected_length, sizeof expected - expected_length,
                                                "%s%zu(1)", k ? " " : "", offset);
    }
    ranges = fm5_debug_describe_freed_corruption(user, size, text, sizeof text);
    CHECK_EQ_INT(ranges, 32);
    CHECK_MSG(strcmp(text, expected) == 0, "got \"%s\", expected \"%s\"", text, expected);

    /* Exactly 32 are all described; a 33rd is left out. */
    fm5_debug_fill_freed(user, size);
    for (size_t k = 0; k < 32; k++)
        user[16 + 3 * k] = 0x7F;
    CHECK_EQ_INT(fm5_debug_describe_freed_corruption(user, size, text, sizeof text), 32);
    CHECK_MSG(strcmp(text, expected) == 0, "got \"%s\"", text);
    user[size - 1] = 0;
    CHECK_EQ_INT(fm5_debug_describe_freed_corruption(user, size, text, sizeof text), 32);
    CHECK_MSG(strcmp(text, expected) == 0, "got \"%s\"", text);

    /* A short buffer truncates the text, not the count; no buffer at all still counts. */
    char short_text[12];
    memset(short_text, 'x', sizeof short_text);
    CHECK_EQ_INT(fm5_debug_describe_freed_corruption(user, size, short_text, sizeof short_text), 32);
    CHECK(memcmp(short_text, expected, sizeof short_text - 1) == 0 && short_text[sizeof short_text - 1] == 0);
    CHECK_EQ_INT(fm5_debug_describe_freed_corruption(user, size, NULL, 0), 32);

    /* A whole block overwritten is one range (with a byte that matches neither the fill nor any byte of
     * the marker); a range at the end is closed by the end. */
    uint8_t foreign = 0x11;
    while (foreign == 0x80 || memchr(user, foreign, sizeof(void *)) != NULL)
        foreign++;
    memset(user, foreign, size);
    CHECK_EQ_INT(fm5_debug_describe_freed_corruption(user, size, text, sizeof text), 1);
    CHECK_MSG(strcmp(text, "0(1000)") == 0, "got \"%s\"", text);
    fm5_debug_fill_freed(user, size);
    memset(user + 990, 0x11, 10);
    CHECK_EQ_INT(fm5_debug_describe_freed_corruption(user, size, text, sizeof text), 1);
    CHECK_MSG(strcmp(text, "990(10)") == 0, "got \"%s\"", text);
    CHECK(guards_intact(user, size));
}

int main(void)
{
    tu_init("test_debug_patterns");
    fm5_os_detect_processor();
    if (!CHECK(window_create()))
        return test_finish();
    layout();
    checksums();
    allocated_fill();
    freed_fill();
    freed_object_table();
    seed_000_corruption();
    seed_001_isolation();
    page_edges();
    multi_range_description();
    return test_finish();
}
