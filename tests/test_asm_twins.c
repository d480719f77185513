/*
 * test_asm_twins — every NASM routine against its C twin (src/api/asm_twins.h), on the same inputs.
 *
 * In the NASM build (FM5_ASM=1) the ordinary names are asm/ routines and fm5_c_* are the C references
 * they stand for; in the pure-C build the ordinary names are aliases of the twins, so every comparison
 * below is trivially equal there, but each is also checked against the expected result worked out here,
 * which keeps the test meaningful in both builds.
 *   a. freed-pattern checker: sizes 0..600 at misalignments 0..15, and areas that end exactly at an
 *      inaccessible page or start right after one; clean areas are intact for both bodies, and every byte
 *      position XORed with 0x01, 0x80 and 0xFF is corrupted for both; the bytes around each area differ
 *      from the fill in every bit, so a read outside the area changes the answer;
 *   b. both fills: sizes 0..600 at misalignments 0..15, and sizes around the descending fill's start
 *      and at 64 KiB at five misalignments, asm into one buffer and C into another, both surrounded by
 *      a pattern: identical bytes, the expected fill inside, the pattern untouched outside;
 *      and the same at page edges;
 *   c. GetMem/FreeMem: for every size 0..2700 and some medium and large sizes, with the same allocator
 *      state both bodies hand out the same small block (and the same medium block), usable sizes agree
 *      and are what FastMM5's tables say, and a block from either body is freed by either;
 *   d. bad pointers (NULL, stack, HeapAlloc, interior and forged-header pointers into live small and
 *      medium blocks, a freed small block, an unfed block of a span, a freed medium block) through both
 *      FreeMem and both ReallocMem bodies: same result, one event each of the same (expected) kind, live
 *      neighbours untouched, the allocated byte count unchanged;
 *   e. ReallocMem's in-place rule (FastMM5 PR #98) for the smallest and largest size of every small class
 *      and every new size from 0 to 2 * usable + 40: the same decision as the rule, for both bodies, the
 *      same usable size when the block moves, and the content preserved, copied with `rep movsb` from a
 *      kilobyte and without it (both settings of fm5_cpu_has_fast_strings);
 *   f. erase modes: both bodies fill with 0x90 on allocation and 0x80 on free while those modes are on;
 *   g. debug mode: a few hundred blocks allocated and freed through both bodies (crosswise) are debug
 *      blocks with the 0x90 fill, become freed debug blocks with the 0x80 pattern, double frees give the
 *      same event from both; after leaving debug mode, both bodies reuse a freed debug block alike.
 * Every mismatch is printed with its inputs; the test ends with the number of cases compared.
 */
#define TU_WATCHDOG_SECONDS 540
#include "test_util.h"

#include "api/asm_twins.h"
#include "api/startup.h"
#include "base/os.h"
#include "debug/debug_fill.h"
#include "debug/debug_freed_check.h"
#include "debug/debug_freed_object.h"
#include "blocks/small_blocks.h"
#include "blocks/block_status.h"

#define SEED 0xA5A7715ull
#define KIND_BIT(k) (1u << (k))

#if FM5_ASM
#define BUILD_NAME "NASM"
#else
#define BUILD_NAME "pure C"
#endif

/* ------------------------------------------------------------------------------------------------
 * Counting comparisons
 * ---------------------------------------------------------------------------------------------- */

static unsigned long long cases_compared;
static unsigned long long mismatches;

/* One comparison. Passing ones are only counted (there are millions); each failing one is printed with
 * its inputs and fails the test. Each section then makes one check of its own mismatch count. */
#define AGREE(ok, ...) agree_at((ok) ? 1 : 0, #ok, __FILE__, __LINE__, __VA_ARGS__)

static int agree_at(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
    __attribute__((format(gnu_printf, 5, 6)));
static int agree_at(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
{
    cases_compared++;
    if (ok)
        return 1;
    mismatches++;
    va_list args;
    va_start(args, fmt);
    tu_vfail("MISMATCH", expr, file, line, fmt, args);
    va_end(args);
    return 0;
}

typedef struct section_counts {
    unsigned long long cases, mismatches;
} section_counts;

static section_counts section_start(const char *title)
{
    SECTION(title);
    section_counts s = {cases_compared, mismatches};
    return s;
}

static void section_end(const char *what, section_counts start)
{
    unsigned long long cases = cases_compared - start.cases, bad = mismatches - start.mismatches;
    tu_info("%s: %llu cases compared, %llu mismatches", what, cases, bad);
    CHECK_MSG(bad == 0 && cases > 0, "%s: %llu mismatches in %llu cases", what, bad, cases);
}

/* ------------------------------------------------------------------------------------------------
 * A stray access must name the case that made it, not just end the process
 * ---------------------------------------------------------------------------------------------- */

static struct {
    volatile int active;
    const char *volatile routine;
    const char *volatile placement;
    volatile size_t size;
    volatile size_t position; /* SIZE_MAX: a clean area */
    const uint8_t *volatile user;
} current_case;

static LONG CALLBACK report_access_violation(EXCEPTION_POINTERS *info)
{
    if (!current_case.active || info->ExceptionRecord->ExceptionCode != EXCEPTION_ACCESS_VIOLATION)
        return EXCEPTION_CONTINUE_SEARCH;
    const ULONG_PTR *detail = info->ExceptionRecord->ExceptionInformation;
    printf("FAIL: access violation (%s of %p, instruction %p) in %s, %s, size %zu, misalignment %u, "
           "area [%p, %p), corrupted byte %zd\n",
           detail[0] == 1 ? "write" : "read", (void *)detail[1], info->ExceptionRecord->ExceptionAddress,
           current_case.routine, current_case.placement, current_case.size,
           (unsigned)((uintptr_t)current_case.user % 16), (const void *)current_case.user,
           (const void *)(current_case.user + current_case.size),
           current_case.position == SIZE_MAX ? (ptrdiff_t)-1 : (ptrdiff_t)current_case.position);
    printf("test_asm_twins: %llu cases compared before the fault\n", cases_compared);
    printf("%s: %ld passed, %ld failed\n", tu_test_name, (long)tu_passed, (long)tu_failed + 1);
    fflush(stdout);
    TerminateProcess(GetCurrentProcess(), 1);
    return EXCEPTION_CONTINUE_SEARCH;
}

/* ------------------------------------------------------------------------------------------------
 * Memory for the byte-level routines: a buffer with room around the area, and a read-write page
 * between two inaccessible ones
 * ---------------------------------------------------------------------------------------------- */

#define PAGE 4096u
#define MAX_AREA 600u
#define MAX_MISALIGNMENT 15u
#define AROUND 64u
#define BUFFER_BYTES (AROUND + MAX_MISALIGNMENT + MAX_AREA + AROUND)
/* Differs from the freed fill 0x80 in every bit: any bit of it read as part of the area is a difference. */
#define OUTSIDE_BYTE 0x7Fu

static uint8_t area_buffers[2][BUFFER_BYTES] __attribute__((aligned(64)));
/* For the fills of large areas (the descending allocated fill, FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE). */
#define MAX_LARGE_AREA (65536u + 40u)
#define LARGE_BUFFER_BYTES (AROUND + MAX_MISALIGNMENT + MAX_LARGE_AREA + AROUND)
static uint8_t large_buffers[2][LARGE_BUFFER_BYTES] __attribute__((aligned(64)));
static uint8_t *guarded_page; /* read-write, with PAGE_NOACCESS pages before and after it */

static int make_guarded_page(void)
{
    uint8_t *base = (uint8_t *)VirtualAlloc(NULL, 3 * PAGE, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!CHECK(base != NULL))
        return 0;
    DWORD old;
    if (!CHECK(VirtualProtect(base, PAGE, PAGE_NOACCESS, &old)) ||
        !CHECK(VirtualProtect(base + 2 * PAGE, PAGE, PAGE_NOACCESS, &old)))
        return 0;
    guarded_page = base + PAGE;
    return 1;
}

static const void *marker(void)
{
    return fm5_freed_object_marker();
}

/* ------------------------------------------------------------------------------------------------
 * a. The freed-pattern checker
 * ---------------------------------------------------------------------------------------------- */

static void compare_checker(const char *placement, const uint8_t *user, size_t size, size_t position, int expected)
{
    current_case.position = position;
    current_case.routine = "fm5_debug_freed_pattern_intact";
    int asm_result = fm5_debug_freed_pattern_intact(user, size);
    current_case.routine = "fm5_c_debug_freed_pattern_intact";
    int c_result = fm5_c_debug_freed_pattern_intact(user, size);
    if (position == SIZE_MAX)
        AGREE(asm_result == expected && c_result == expected,
              "checker, %s, size %zu, misalignment %u, clean area: asm %d, C %d, expected %d", placement, size,
              (unsigned)((uintptr_t)user % 16), asm_result, c_result, expected);
    else
        AGREE(asm_result == expected && c_result == expected,
              "checker, %s, size %zu, misalignment %u, byte %zu set to 0x%02x: asm %d, C %d, expected %d",
              placement, size, (unsigned)((uintptr_t)user % 16), position, user[position], asm_result, c_result,
              expected);
}

/* The area must already hold what the C freed fill writes, and be surrounded by OUTSIDE_BYTE. */
static void check_every_corruption(const char *placement, uint8_t *user, size_t size)
{
    static const uint8_t flips[] = {0x01, 0x80, 0xFF};
    current_case.placement = placement;
    current_case.size = size;
    current_case.user = user;
    compare_checker(placement, user, size, SIZE_MAX, 1);
    for (size_t position = 0; position < size; position++) {
        uint8_t original = user[position];
        for (size_t f = 0; f < sizeof flips; f++) {
            user[position] = (uint8_t)(original ^ flips[f]);
            compare_checker(placement, user, size, position, 0);
        }
        user[position] = original;
    }
    compare_checker(placement, user, size, SIZE_MAX, 1);
}

static size_t first_byte_not(const uint8_t *from, size_t count, uint8_t value)
{
    for (size_t i = 0; i < count; i++)
        if (from[i] != value)
            return i;
    return SIZE_MAX;
}

/* The checker writes nothing: the area and its surroundings are as they were. */
static void check_checker_wrote_nothing(const char *placement, const uint8_t *region, size_t region_size,
                                        const uint8_t *user, size_t size)
{
    size_t before = (size_t)(user - region);
    size_t bad = first_byte_not(region, before, OUTSIDE_BYTE);
    if (bad == SIZE_MAX) {
        bad = first_byte_not(user + size, region_size - before - size, OUTSIDE_BYTE);
        if (bad != SIZE_MAX)
            bad += before + size;
    }
    size_t inside = tu_debug_freed_mismatch(user, size, marker());
    AGREE(bad == SIZE_MAX && inside == SIZE_MAX,
          "checker, %s, size %zu: memory changed (outside at region byte %zd, inside at byte %zd)", placement, size,
          bad == SIZE_MAX ? (ptrdiff_t)-1 : (ptrdiff_t)bad, inside == SIZE_MAX ? (ptrdiff_t)-1 : (ptrdiff_t)inside);
}

static void checker_case(const char *placement, uint8_t *region, size_t region_size, uint8_t *user, size_t size)
{
    memset(region, OUTSIDE_BYTE, region_size);
    fm5_c_debug_fill_freed(user, size);
    check_every_corruption(placement, user, size);
    check_checker_wrote_nothing(placement, region, region_size, user, size);
}

static void test_checker(void)
{
    section_counts s = section_start("a. freed-pattern checker: asm against C, clean and every byte corrupted");
    tu_info("the NASM checker takes its SSE2 loop from %u bytes up", FM5_DEBUG_FREED_CHECK_SSE2_MINIMUM_SIZE);
    current_case.active = 1;
    uint8_t *region = area_buffers[0];
    for (size_t size = 0; size <= MAX_AREA; size++)
        for (size_t misalignment = 0; misalignment <= MAX_MISALIGNMENT; misalignment++)
            checker_case("inside a buffer", region, BUFFER_BYTES, region + AROUND + misalignment, size);
    if (guarded_page) {
        for (size_t size = 0; size <= MAX_AREA; size++) {
            checker_case("ending at an inaccessible page", guarded_page, PAGE, guarded_page + PAGE - size, size);
            checker_case("starting after an inaccessible page", guarded_page, PAGE, guarded_page, size);
        }
    }
    current_case.active = 0;
    section_end("checker", s);
}

/* ------------------------------------------------------------------------------------------------
 * b. The fills
 * ---------------------------------------------------------------------------------------------- */

typedef struct fill_routine {
    const char *asm_name;
    void (*asm_body)(void *, size_t);
    const char *c_name;
    void (*c_body)(void *, size_t);
    enum { FILL_ALLOCATED, FILL_FREED, FILL_ZERO } pattern; /* what it writes */
} fill_routine;

static const fill_routine fill_routines[] = {
    {"fm5_debug_fill_allocated", fm5_debug_fill_allocated, "fm5_c_debug_fill_allocated", fm5_c_debug_fill_allocated,
     FILL_ALLOCATED},
    {"fm5_debug_fill_freed", fm5_debug_fill_freed, "fm5_c_debug_fill_freed", fm5_c_debug_fill_freed, FILL_FREED},
    {"fm5_zero_fill", fm5_zero_fill, "fm5_c_zero_fill", fm5_c_zero_fill, FILL_ZERO},
};

static uint8_t expected_fill_byte(const fill_routine *r, size_t size, size_t offset)
{
    switch (r->pattern) {
    case FILL_FREED:
        return tu_debug_freed_byte(size, offset, marker());
    case FILL_ZERO:
        return 0;
    default:
        return (uint8_t)TU_DEBUG_ALLOCATED_FILL;
    }
}

/* The first byte of `region` that is not as expected after filling [user, user + size): the fill inside,
 * the pattern of `key` (by region offset) outside. Returns its region offset, or SIZE_MAX. */
static size_t first_wrong_byte(const fill_routine *r, const uint8_t *region, size_t region_size,
                               const uint8_t *user, size_t size, uint64_t key, uint8_t *expected)
{
    size_t start = (size_t)(user - region);
    for (size_t i = 0; i < region_size; i++) {
        uint8_t want = (i >= start && i < start + size) ? expected_fill_byte(r, size, i - start)
                                                          : tu_pattern_byte(key, i);
        if (region[i] != want) {
            *expected = want;
            return i;
        }
    }
    return SIZE_MAX;
}

/* Fills the same area of two identical regions, one with each body, and compares both with each other
 * and with the expected bytes. */
static void fill_case(const fill_routine *r, const char *placement, uint8_t *asm_region, uint8_t *c_region,
                      size_t region_size, size_t user_offset, size_t size, uint64_t key)
{
    tu_pattern_fill(asm_region, region_size, key);
    if (c_region != asm_region)
        tu_pattern_fill(c_region, region_size, key);
    uint8_t *asm_user = asm_region + user_offset;
    unsigned misalignment = (unsigned)((uintptr_t)asm_user % 16);
    current_case.placement = placement;
    current_case.size = size;
    current_case.position = SIZE_MAX;
    current_case.user = asm_user;
    current_case.routine = r->asm_name;
    r->asm_body(asm_user, size);
    uint8_t expected = 0;
    size_t bad = first_wrong_byte(r, asm_region, region_size, asm_user, size, key, &expected);
    AGREE(bad == SIZE_MAX, "%s (asm), %s, size %zu, misalignment %u: byte at %td from the area is 0x%02x, expected 0x%02x",
          r->asm_name, placement, size, misalignment, bad == SIZE_MAX ? 0 : (ptrdiff_t)bad - (ptrdiff_t)user_offset,
          bad == SIZE_MAX ? 0 : asm_region[bad], expected);

    uint8_t asm_copy[PAGE];
    int separate = c_region != asm_region;
    if (!separate) { /* one page for both: keep the asm result to compare, then start again */
        memcpy(asm_copy, asm_region, region_size);
        tu_pattern_fill(c_region, region_size, key);
    }
    uint8_t *c_user = c_region + user_offset;
    current_case.user = c_user;
    current_case.routine = r->c_name;
    r->c_body(c_user, size);
    bad = first_wrong_byte(r, c_region, region_size, c_user, size, key, &expected);
    AGREE(bad == SIZE_MAX, "%s (C), %s, size %zu, misalignment %u: byte at %td from the area is 0x%02x, expected 0x%02x",
          r->c_name, placement, size, misalignment, bad == SIZE_MAX ? 0 : (ptrdiff_t)bad - (ptrdiff_t)user_offset,
          bad == SIZE_MAX ? 0 : c_region[bad], expected);

    const uint8_t *asm_bytes = separate ? asm_region : asm_copy;
    size_t differ = SIZE_MAX;
    for (size_t i = 0; i < region_size && differ == SIZE_MAX; i++)
        if (asm_bytes[i] != c_region[i])
            differ = i;
    AGREE(differ == SIZE_MAX, "%s, %s, size %zu, misalignment %u: asm and C differ at byte %td from the area "
          "(asm 0x%02x, C 0x%02x)", r->asm_name, placement, size, misalignment,
          differ == SIZE_MAX ? 0 : (ptrdiff_t)differ - (ptrdiff_t)user_offset,
          differ == SIZE_MAX ? 0 : asm_bytes[differ], differ == SIZE_MAX ? 0 : c_region[differ]);
}

static void test_fills(void)
{
    section_counts s = section_start("b. debug fills and the zero fill: asm against C, every size and misalignment, "
                                     "guards intact");
    tu_info("both fills take their bulk path from %u bytes up", FM5_DEBUG_BULK_FILL_MINIMUM_SIZE);
    current_case.active = 1;
    for (size_t k = 0; k < sizeof fill_routines / sizeof fill_routines[0]; k++) {
        const fill_routine *r = &fill_routines[k];
        for (size_t size = 0; size <= MAX_AREA; size++)
            for (size_t misalignment = 0; misalignment <= MAX_MISALIGNMENT; misalignment++)
                fill_case(r, "inside a buffer", area_buffers[0], area_buffers[1], BUFFER_BYTES, AROUND + misalignment,
                          size, tu_pattern_key(SEED, size, misalignment));
        /* Around the size where the allocated fill starts to run from the end down, and at 64 KiB. */
        static const size_t large_sizes[] = { FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE - 1,
                                              FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE,
                                              FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE + 1,
                                              FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE + 7,
                                              FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE + 31,
                                              FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE + 32,
                                              FM5_DEBUG_DESCENDING_FILL_MINIMUM_SIZE + 33,
                                              65536, 65537, 65543, 65567, MAX_LARGE_AREA };
        static const size_t large_misalignments[] = { 0, 1, 7, 8, 15 };
        for (size_t i = 0; i < sizeof large_sizes / sizeof large_sizes[0]; i++)
            for (size_t m = 0; m < sizeof large_misalignments / sizeof large_misalignments[0]; m++)
                fill_case(r, "inside a large buffer", large_buffers[0], large_buffers[1], LARGE_BUFFER_BYTES,
                          AROUND + large_misalignments[m], large_sizes[i], tu_pattern_key(SEED + 3, i, m));
        if (guarded_page) {
            for (size_t size = 0; size <= MAX_AREA; size++) {
                fill_case(r, "ending at an inaccessible page", guarded_page, guarded_page, PAGE, PAGE - size, size,
                          tu_pattern_key(SEED + 1, size, 0));
                fill_case(r, "starting after an inaccessible page", guarded_page, guarded_page, PAGE, 0, size,
                          tu_pattern_key(SEED + 2, size, 0));
            }
        }
    }
    current_case.active = 0;
    section_end("fills", s);
}

/* ------------------------------------------------------------------------------------------------
 * The two bodies of the block routines
 * ---------------------------------------------------------------------------------------------- */

typedef struct body {
    const char *name;
    void *(FM5_CALL *get_mem)(size_t);
    int(FM5_CALL *free_mem)(void *);
    void *(FM5_CALL *realloc_mem)(void *, size_t);
} body;

static const body asm_body = {"asm", FastMM_GetMem, FastMM_FreeMem, FastMM_ReallocMem};
static const body c_body = {"C", fm5_c_get_mem, fm5_c_free_mem, fm5_c_realloc_mem};
static const body *const bodies[2] = {&asm_body, &c_body};

static void check_the_build(void)
{
    SECTION("the build");
    tu_info("%s build: FM5_ASM=%d, FM5_SSE2_CHECKER=%d", BUILD_NAME, FM5_ASM, FM5_SSE2_CHECKER);
    const struct {
        const char *name;
        uintptr_t ordinary, twin;
    } pairs[] = {
        {"FastMM_GetMem", (uintptr_t)&FastMM_GetMem, (uintptr_t)&fm5_c_get_mem},
        {"FastMM_FreeMem", (uintptr_t)&FastMM_FreeMem, (uintptr_t)&fm5_c_free_mem},
        {"FastMM_ReallocMem", (uintptr_t)&FastMM_ReallocMem, (uintptr_t)&fm5_c_realloc_mem},
        {"fm5_debug_fill_allocated", (uintptr_t)&fm5_debug_fill_allocated, (uintptr_t)&fm5_c_debug_fill_allocated},
        {"fm5_debug_fill_freed", (uintptr_t)&fm5_debug_fill_freed, (uintptr_t)&fm5_c_debug_fill_freed},
        {"fm5_zero_fill", (uintptr_t)&fm5_zero_fill, (uintptr_t)&fm5_c_zero_fill},
        {"fm5_free_proved_small_block", (uintptr_t)&fm5_free_proved_small_block,
         (uintptr_t)&fm5_c_free_proved_small_block},
        {"fm5_debug_freed_pattern_intact", (uintptr_t)&fm5_debug_freed_pattern_intact,
         (uintptr_t)&fm5_c_debug_freed_pattern_intact},
    };
    /* A NASM build whose ordinary name still were the twin would compare the C code with itself. */
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        CHECK_MSG((pairs[i].ordinary != pairs[i].twin) == FM5_ASM, "%s at %p, its twin at %p in the %s build",
                  pairs[i].name, (void *)pairs[i].ordinary, (void *)pairs[i].twin, BUILD_NAME);
}

/* ------------------------------------------------------------------------------------------------
 * c. GetMem and FreeMem
 * ---------------------------------------------------------------------------------------------- */

/* Allocates with `getter`, frees with `freer`, then allocates again with `second`: with one thread, a
 * small block freed goes to the head of its span's free list and that span to the head of arena 0's
 * partially-free list, where every GetMem body looks first, so the second allocation must be the same
 * block. Medium blocks are as deterministic: the freed block merges back into exactly the free space it
 * came from, and both bodies run the same medium-block code on the same state. Large blocks come from
 * VirtualAlloc, which may place the next one anywhere: for those only the usable size is compared. */
static void same_block_case(size_t n, const body *getter, const body *freer, const body *second)
{
    int small = n <= TU_MAX_SMALL_USER;
    int large = n > TU_MAX_MEDIUM_USER;
    size_t expected_usable = tu_expected_usable(n, TU_DEFAULT_ALIGNMENT);
    void *p = getter->get_mem(n);
    if (!AGREE(p != NULL, "GetMem(%zu) via %s returned NULL", n, getter->name))
        return;
    size_t usable = FastMM_BlockMaximumUserBytes(p);
    AGREE(usable == expected_usable && usable >= n, "GetMem(%zu) via %s: usable %zu, expected %zu", n, getter->name,
          usable, expected_usable);
    AGREE(tu_is_aligned(p, TU_DEFAULT_ALIGNMENT), "GetMem(%zu) via %s: %p misaligned", n, getter->name, p);
    memset(p, 0x5A, usable); /* the block is writable over its whole usable size */
    int freed = freer->free_mem(p);
    AGREE(freed == 0, "FreeMem via %s of a %zu-byte block from %s returned %d", freer->name, n, getter->name, freed);
    void *q = second->get_mem(n);
    if (!AGREE(q != NULL, "GetMem(%zu) via %s returned NULL", n, second->name))
        return;
    size_t second_usable = FastMM_BlockMaximumUserBytes(q);
    if (!large)
        AGREE(q == p, "GetMem(%zu): via %s then FreeMem via %s gave %p, then GetMem via %s gave %p (%s block)", n,
              getter->name, freer->name, p, second->name, q, small ? "small" : "medium");
    AGREE(second_usable == usable, "GetMem(%zu): usable %zu via %s, %zu via %s", n, usable, getter->name,
          second_usable, second->name);
    freed = second->free_mem(q);
    AGREE(freed == 0, "FreeMem via %s of a %zu-byte block returned %d", second->name, n, freed);
}

static void test_get_free(void)
{
    section_counts s = section_start("c. GetMem/FreeMem: both bodies hand out the same block");
    tu_events_reset();
    static const size_t beyond_small[] = {3000, 5000, 20000, 100000, 101176, 101177, 300000, 558904, 558905,
                                          1000000, 4u << 20};
    size_t sizes = 0;
    for (size_t n = 0; n <= 2700 + sizeof beyond_small / sizeof beyond_small[0]; n++) {
        size_t size = n <= 2700 ? n : beyond_small[n - 2701];
        /* Settle the class first, so that both orders below start from the state the other one left. */
        void *warm = fm5_c_get_mem(size);
        fm5_c_free_mem(warm);
        same_block_case(size, &asm_body, &asm_body, &c_body);
        same_block_case(size, &c_body, &c_body, &asm_body);
        same_block_case(size, &asm_body, &c_body, &asm_body);
        same_block_case(size, &c_body, &asm_body, &c_body);
        sizes++;
    }
    tu_info("%zu sizes, each in four orders", sizes);
    CHECK_MSG(tu_events_total() == 0, "%ld events during ordinary allocations", (long)tu_events_total());
    section_end("GetMem/FreeMem", s);
}

/* ------------------------------------------------------------------------------------------------
 * e. ReallocMem's in-place rule
 * ---------------------------------------------------------------------------------------------- */

/* FastMM5 PR #98's fast path with fm5's factor (a third, not FastMM5's quarter), written out here rather
 * than taken from realloc_rules.h so that a change there shows up as a failure: a small block stays when
 * the new size fits and the block would not be mostly empty. */
static int small_block_should_stay(size_t new_size, size_t usable)
{
    return new_size <= usable && new_size * 3 + 64 >= usable;
}

/* A small block's copy stops at its usable bytes: the status word right after them, the next block's in
 * the span (every block position has one from the span's making), still names that span. */
static void check_neighbour_status(const body *b, void *r, size_t n, size_t m)
{
    unsigned status = fm5_status_load(r);
    if (!(status & FM5_STATUS_SMALL))
        return;
    fm5_small_span *span = fm5_small_span_of(r, status);
    size_t offset = (size_t)((char *)r - (char *)span) - FM5_SMALL_SPAN_HEADER_SIZE;
    if (offset + span->block_size >= span->blocks_bytes)
        return;
    char *next = (char *)r + span->block_size;
    unsigned next_status = fm5_status_load(next);
    AGREE((next_status & FM5_STATUS_SMALL) && fm5_small_span_of(next, next_status) == span,
          "ReallocMem(%zu-byte block, %zu) via %s moved it to %p, and the next block's status word reads 0x%x",
          n, m, b->name, r, next_status);
}

static void realloc_case(const body *b, size_t n, size_t m, size_t usable, int *stayed, size_t *new_usable)
{
    *stayed = -1;
    *new_usable = 0;
    void *p = b->get_mem(n);
    if (!AGREE(p != NULL, "GetMem(%zu) via %s returned NULL", n, b->name))
        return;
    uint64_t key = tu_pattern_key(SEED, n, m);
    tu_pattern_fill(p, usable, key);
    void *r = b->realloc_mem(p, m);
    if (!AGREE(r != NULL, "ReallocMem(%zu-byte block, %zu) via %s returned NULL", n, m, b->name)) {
        b->free_mem(p);
        return;
    }
    *stayed = r == p;
    /* A block that moved was freed by the mover (the proved free): its free mark is set. */
    if (!*stayed)
        AGREE(fm5_status_load(p) & FM5_STATUS_FREE, "ReallocMem(%zu-byte block, %zu) via %s moved it and left the "
              "old block live (status 0x%x)", n, m, b->name, fm5_status_load(p));
    *new_usable = FastMM_BlockMaximumUserBytes(r);
    if (!*stayed)
        check_neighbour_status(b, r, n, m);
    size_t kept = n < m ? n : m;
    size_t bad = tu_pattern_find_mismatch(r, 0, kept, key);
    AGREE(bad == SIZE_MAX, "ReallocMem(%zu-byte block, %zu) via %s (%s): byte %zu of %zu not preserved", n, m, b->name,
          *stayed ? "in place" : "moved", bad, kept);
    AGREE(*new_usable >= m, "ReallocMem(%zu-byte block, %zu) via %s: usable %zu", n, m, b->name, *new_usable);
    int freed = b->free_mem(r);
    AGREE(freed == 0, "FreeMem via %s after ReallocMem(%zu-byte block, %zu) returned %d", b->name, n, m, freed);
}

/* Every class's smallest and largest size reallocated to every size up to twice its usable bytes and 40
 * more, through both bodies, which must agree with the rule and each other. Returns the classes seen. */
static size_t realloc_rule_pairs(size_t *pairs_out)
{
    size_t classes = 0, pairs = 0;
    size_t previous_usable = 0;
    for (size_t n = 0; n <= TU_MAX_SMALL_USER; n++) {
        size_t usable = tu_expected_usable(n, TU_DEFAULT_ALIGNMENT);
        if (usable == previous_usable)
            continue;
        /* n is the smallest size of a new class, usable its largest. */
        previous_usable = usable;
        classes++;
        size_t firsts[2] = {n, usable};
        for (size_t f = 0; f < 2; f++) {
            if (f == 1 && usable == n)
                break;
            size_t first = firsts[f];
            for (size_t m = 0; m <= 2 * usable + 40; m++) {
                int stayed[2];
                size_t new_usable[2];
                for (size_t k = 0; k < 2; k++)
                    realloc_case(bodies[k], first, m, usable, &stayed[k], &new_usable[k]);
                int rule = small_block_should_stay(m, usable);
                AGREE(stayed[0] == rule && stayed[1] == rule,
                      "ReallocMem(%zu-byte block of usable %zu, %zu): stays asm %d, C %d; the rule says %d", first,
                      usable, m, stayed[0], stayed[1], rule);
                AGREE(new_usable[0] == new_usable[1],
                      "ReallocMem(%zu-byte block of usable %zu, %zu): new usable asm %zu, C %zu", first, usable, m,
                      new_usable[0], new_usable[1]);
                pairs++;
            }
        }
    }
    *pairs_out = pairs;
    return classes;
}

static void test_realloc_rule(void)
{
    section_counts s = section_start("e. ReallocMem: the in-place rule for small blocks, both bodies");
    tu_events_reset();
    size_t pairs;
    size_t classes = realloc_rule_pairs(&pairs);
    tu_info("%zu small classes, %zu (size, new size) pairs", classes, pairs);
    /* Every class is a multiple of the default alignment, so every one was reached. */
    CHECK_EQ_SIZE(classes, TU_SMALL_CLASS_COUNT);
    /* Both movers copy a kilobyte or more with `rep movsb` where the processor has fast strings, 16
     * bytes at a time otherwise: the other way too (rep movsb copies on any x86, only slower). */
    uint8_t has_fast_strings = fm5_cpu_has_fast_strings;
    fm5_cpu_has_fast_strings = !has_fast_strings;
    classes = realloc_rule_pairs(&pairs);
    fm5_cpu_has_fast_strings = has_fast_strings;
    tu_info("fast strings %s: %zu small classes, %zu pairs", has_fast_strings ? "off" : "on", classes, pairs);
    CHECK_EQ_SIZE(classes, TU_SMALL_CLASS_COUNT);
#if defined(__i386__)
    /* Win32 runs on any i686: both movers copy without SSE2 where the processor has none. */
    uint8_t has_sse2 = fm5_cpu_has_sse2;
    fm5_cpu_has_sse2 = 0;
    classes = realloc_rule_pairs(&pairs);
    fm5_cpu_has_sse2 = has_sse2;
    tu_info("without SSE2: %zu small classes, %zu pairs", classes, pairs);
    CHECK_EQ_SIZE(classes, TU_SMALL_CLASS_COUNT);
#endif
    CHECK_MSG(tu_events_total() == 0, "%ld events during ordinary reallocations", (long)tu_events_total());
    section_end("ReallocMem rule", s);
}

/* ------------------------------------------------------------------------------------------------
 * e2. The proved free of ReallocMem's mover
 * ---------------------------------------------------------------------------------------------- */

typedef int (*proved_free)(void *, fm5_small_span *, struct fm5_small_manager *);

/* Both bodies of fm5_free_proved_small_block: a live small block is freed (0, free mark set, no event);
 * the same call on a block freed already fails (-1) with one double-free event naming it; and a status
 * word of zeros (what a released region's tombstone reads, base/os.h) is refused with one event and left
 * as it was, where a claim that trusted the proof would take the zeros for a live status. */
static void test_proved_free(void)
{
    section_counts s = section_start("e2. the proved free: live blocks freed, a freed block refused, both bodies");
    const proved_free bodies_of_free[2] = {fm5_free_proved_small_block, fm5_c_free_proved_small_block};
    const char *names[2] = {"asm", "C"};
    static const size_t sizes[] = {1, 8, 100, 1000, TU_MAX_SMALL_USER};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int k = 0; k < 2; k++) {
            char *p = FastMM_GetMem(sizes[i]);
            if (!AGREE(p != NULL, "GetMem(%zu) returned NULL", sizes[i]))
                continue;
            fm5_small_span *span = fm5_small_span_of(p, fm5_status_load(p));
            tu_events_reset();
            int result = bodies_of_free[k](p, span, span->manager);
            AGREE(result == 0 && (fm5_status_load(p) & FM5_STATUS_FREE) && tu_events_total() == 0,
                  "proved free (%s) of a live %zu-byte block: result %d, status 0x%x, %ld events", names[k], sizes[i],
                  result, fm5_status_load(p), tu_events_total());
            int kind = 0;
            const void *pointer = NULL;
            tu_events_reset();
            result = bodies_of_free[k](p, span, span->manager);
            long events = tu_events_total();
            tu_events_last(&kind, &pointer, NULL, NULL, 0);
            AGREE(result == -1 && events == 1 && kind == FastMM_EventDoubleFree && pointer == p,
                  "proved free (%s) of a freed %zu-byte block: result %d, %ld events, the last %s naming %p", names[k],
                  sizes[i], result, events, tu_event_kind_name(kind), pointer);

            char *q = FastMM_GetMem(sizes[i]);
            if (!AGREE(q != NULL, "GetMem(%zu) returned NULL", sizes[i]))
                continue;
            span = fm5_small_span_of(q, fm5_status_load(q));
            uint16_t status = *fm5_status_word(q);
            *fm5_status_word(q) = 0;
            tu_events_reset();
            result = bodies_of_free[k](q, span, span->manager);
            events = tu_events_total();
            unsigned after = fm5_status_load(q);
            *fm5_status_word(q) = status;
            AGREE(result == -1 && events == 1 && after == 0,
                  "proved free (%s) of a %zu-byte block whose status word reads zero: result %d, %ld events, status "
                  "after 0x%x", names[k], sizes[i], result, events, after);
            AGREE(FastMM_FreeMem(q) == 0, "FreeMem of the %zu-byte block with its status word back", sizes[i]);
        }
    section_end("proved free", s);
}

/* ------------------------------------------------------------------------------------------------
 * d. Bad pointers
 * ---------------------------------------------------------------------------------------------- */

typedef struct live_block {
    const char *name;
    void *p;
    size_t usable;
    uint64_t key;
} live_block;

#define MAX_LIVES 8
static live_block lives[MAX_LIVES];
static size_t live_count;

static void *keep_live(const char *name, void *p)
{
    if (!CHECK_MSG(p != NULL && live_count < MAX_LIVES, "live block %s", name))
        return p;
    live_block *l = &lives[live_count];
    l->name = name;
    l->p = p;
    l->usable = FastMM_BlockMaximumUserBytes(p);
    l->key = tu_pattern_key(SEED, 1000 + live_count, 0);
    tu_pattern_fill(p, l->usable, l->key);
    live_count++;
    return p;
}

/* A status word the test wrote into a live block on purpose (see forge_status_word): those two bytes are
 * expected to hold it instead of the pattern. */
static struct {
    const live_block *block;
    size_t offset;
    uint8_t word[2];
} forged;

static size_t live_block_mismatch(const live_block *l)
{
    if (forged.block != l)
        return tu_pattern_find_mismatch(l->p, 0, l->usable, l->key);
    const uint8_t *bytes = (const uint8_t *)l->p;
    size_t bad = tu_pattern_find_mismatch(l->p, 0, forged.offset, l->key);
    if (bad == SIZE_MAX && bytes[forged.offset] != forged.word[0])
        bad = forged.offset;
    if (bad == SIZE_MAX && bytes[forged.offset + 1] != forged.word[1])
        bad = forged.offset + 1;
    if (bad == SIZE_MAX)
        bad = tu_pattern_find_mismatch(l->p, forged.offset + 2, l->usable, l->key);
    return bad;
}

static void check_lives_untouched(const char *call, const char *bad_name, const body *b)
{
    for (size_t i = 0; i < live_count; i++) {
        size_t bad = live_block_mismatch(&lives[i]);
        AGREE(bad == SIZE_MAX, "%s via %s of %s: live %s block %p changed at byte %zu", call, b->name, bad_name,
              lives[i].name, lives[i].p, bad);
    }
}

typedef struct event_seen {
    int result_ok;
    long events;
    int kind;
    const void *pointer;
} event_seen;

static event_seen call_free(const body *b, void *bad)
{
    event_seen e;
    tu_events_reset();
    e.result_ok = b->free_mem(bad) == -1;
    e.events = tu_events_total();
    tu_events_last(&e.kind, &e.pointer, NULL, NULL, 0);
    return e;
}

static event_seen call_realloc(const body *b, void *bad, size_t m)
{
    event_seen e;
    tu_events_reset();
    e.result_ok = b->realloc_mem(bad, m) == NULL;
    e.events = tu_events_total();
    tu_events_last(&e.kind, &e.pointer, NULL, NULL, 0);
    return e;
}

static void compare_events(const char *call, const char *name, const void *bad, size_t m, const event_seen *a,
                           const event_seen *c, unsigned accepted_kinds)
{
    AGREE(a->result_ok && c->result_ok, "%s(%s %p, %zu): refused by asm %d, by C %d", call, name, bad, m, a->result_ok,
          c->result_ok);
    AGREE(a->events == 1 && c->events == 1, "%s(%s %p, %zu): %ld events via asm, %ld via C", call, name, bad, m,
          a->events, c->events);
    AGREE(a->kind == c->kind, "%s(%s %p, %zu): event %s via asm, %s via C", call, name, bad, m,
          tu_event_kind_name(a->kind), tu_event_kind_name(c->kind));
    AGREE(c->kind > 0 && c->kind < 32 && (accepted_kinds & KIND_BIT(c->kind)),
          "%s(%s %p, %zu): event %s (%d) is not of an expected kind", call, name, bad, m, tu_event_kind_name(c->kind),
          c->kind);
    AGREE(a->pointer == bad && c->pointer == bad, "%s(%s %p, %zu): events name %p (asm) and %p (C)", call, name, bad, m,
          a->pointer, c->pointer);
}

/* Both FreeMem bodies and both ReallocMem bodies on one bad pointer. Nothing is allocated in between, so
 * a freed block under test stays free and both bodies see the same state. */
static void bad_pointer(const char *name, void *bad, unsigned free_kinds, unsigned realloc_kinds)
{
    size_t allocated = tu_allocated_bytes();
    event_seen a = call_free(&asm_body, bad);
    check_lives_untouched("FreeMem", name, &asm_body);
    event_seen c = call_free(&c_body, bad);
    check_lives_untouched("FreeMem", name, &c_body);
    compare_events("FreeMem", name, bad, 0, &a, &c, free_kinds);
    /* Sizes that a small block of any class would keep in place, and some that it would not. */
    static const size_t new_sizes[] = {0, 1, 8, 50, 100, 120, 2622, 5000};
    for (size_t i = 0; i < sizeof new_sizes / sizeof new_sizes[0]; i++) {
        a = call_realloc(&asm_body, bad, new_sizes[i]);
        check_lives_untouched("ReallocMem", name, &asm_body);
        c = call_realloc(&c_body, bad, new_sizes[i]);
        check_lives_untouched("ReallocMem", name, &c_body);
        compare_events("ReallocMem", name, bad, new_sizes[i], &a, &c, realloc_kinds);
    }
    size_t after = tu_allocated_bytes();
    AGREE(after == allocated, "after bad pointer %s %p: allocated bytes %zu, before %zu", name, bad, after, allocated);
}

/* Two small blocks of `size` next to each other in one span. Others found on the way are freed. */
static int adjacent_small_pair(size_t size, void **lower, void **upper)
{
    void *pool[64];
    size_t n = 0;
    int found = 0;
    size_t stride = tu_small_block_size(size, TU_DEFAULT_ALIGNMENT);
    for (; n < 64 && !found; n++) {
        pool[n] = fm5_c_get_mem(size);
        if (!pool[n])
            break;
        for (size_t i = 0; i < n && !found; i++) {
            uintptr_t x = (uintptr_t)pool[i], y = (uintptr_t)pool[n];
            if (x - y == stride || y - x == stride) {
                *lower = (void *)(x < y ? x : y);
                *upper = (void *)(x < y ? y : x);
                pool[i] = pool[n] = NULL;
                found = 1;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        if (pool[i])
            fm5_c_free_mem(pool[i]);
    return found;
}

/* Gives `at` - 2, inside the live block `l`, the status word of `real`, so that a body that trusted
 * status words would see a live small (or medium) block there. */
static void forge_status_word(const live_block *l, void *at, const void *real)
{
    forged.block = l;
    forged.offset = (size_t)((uint8_t *)at - 2 - (uint8_t *)l->p);
    memcpy(forged.word, (const uint8_t *)real - 2, 2);
    memcpy((uint8_t *)at - 2, forged.word, 2);
}

static void unforge(void)
{
    if (forged.block)
        tu_pattern_fill_range(forged.block->p, forged.offset, forged.offset + 2, forged.block->key);
    forged.block = NULL;
}

static void test_bad_pointers(void)
{
    section_counts s = section_start("d. bad pointers through both FreeMem and both ReallocMem bodies");
    const unsigned invalid_free = KIND_BIT(FastMM_EventInvalidFree);
    const unsigned invalid_realloc = KIND_BIT(FastMM_EventInvalidRealloc);
    const unsigned double_free = KIND_BIT(FastMM_EventDoubleFree);
    const unsigned realloc_freed = KIND_BIT(FastMM_EventReallocOfFreedBlock);

    void *small_lower = NULL, *small_upper = NULL, *keeper = NULL, *victim = NULL;
    if (!CHECK(adjacent_small_pair(100, &small_lower, &small_upper)) || !CHECK(adjacent_small_pair(300, &keeper, &victim)))
        return;
    live_block *small = &lives[live_count];
    keep_live("small (100 bytes)", small_lower);
    keep_live("small neighbour (100 bytes)", small_upper);
    keep_live("small keeper (300 bytes)", keeper);
    live_block *medium = &lives[live_count];
    keep_live("medium (20000 bytes)", fm5_c_get_mem(20000));

    bad_pointer("NULL", NULL, invalid_free, invalid_realloc);

    uint8_t stack_area[256] __attribute__((aligned(64)));
    memset(stack_area, 0, sizeof stack_area);
    bad_pointer("stack", stack_area + 64, invalid_free, invalid_realloc);

    void *heap = HeapAlloc(GetProcessHeap(), 0, 256);
    if (CHECK(heap != NULL)) {
        memset(heap, 0, 256);
        bad_pointer("HeapAlloc", heap, invalid_free, invalid_realloc);
        HeapFree(GetProcessHeap(), 0, heap);
    }

    uint8_t *l = (uint8_t *)small->p;
    bad_pointer("live small block + 1", l + 1, invalid_free, invalid_realloc);
    bad_pointer("live small block + 8", l + 8, invalid_free, invalid_realloc);
    bad_pointer("live small block + 16", l + 16, invalid_free, invalid_realloc);
    forge_status_word(small, l + 16, l);
    bad_pointer("live small block + 16 with the block's status word before it", l + 16, invalid_free, invalid_realloc);
    unforge();
    forge_status_word(small, l + 64, l);
    bad_pointer("live small block + 64 with the block's status word before it", l + 64, invalid_free, invalid_realloc);
    unforge();

    /* A double free: the victim's neighbour (the keeper) keeps the span, so the victim stays a free block. */
    CHECK_EQ_INT(fm5_c_free_mem(victim), 0);
    bad_pointer("freed small block", victim, double_free, realloc_freed);

    /* A block of a span that the feed has not reached yet: its status word says free since the span was
     * set up. After section c every class's feed stands at the block it handed out last, and that block
     * is the one a new request gets back (the steady state of section c), so the block below it is
     * unfed. With the thread caches off: a cache fill takes a batch from the feed. */
    int caches = FastMM_SetThreadCaches(0);
    void *fed = fm5_c_get_mem(1000);
    if (CHECK(fed != NULL)) {
        unsigned status = *fm5_status_word(fed);
        fm5_small_span *span = fm5_small_span_of(fed, status);
        fm5_small_manager *manager = span->manager;
        uint32_t feed_offset = (uint32_t)fm5_load_u64(&manager->feed);
        uint32_t fed_offset = (uint32_t)((uintptr_t)fed - (uintptr_t)span);
        if (CHECK_MSG(manager->feed_span == span && feed_offset == fed_offset &&
                          fed_offset >= FM5_SMALL_SPAN_HEADER_SIZE + manager->block_size,
                      "no unfed block below %p: feed span %p (block's span %p), feed offset %u, block offset %u",
                      fed, (void *)manager->feed_span, (void *)span, feed_offset, fed_offset)) {
            keep_live("small (1000 bytes) above the unfed part of its span", fed);
            void *unfed = (uint8_t *)fed - manager->block_size;
            bad_pointer("unfed small block", unfed, invalid_free | double_free, invalid_realloc | realloc_freed);
            CHECK_MSG((uint32_t)fm5_load_u64(&manager->feed) == feed_offset, "the feed moved: %u, was %u",
                      (uint32_t)fm5_load_u64(&manager->feed), feed_offset);
        }
    }
    FastMM_SetThreadCaches(caches);

    uint8_t *m = (uint8_t *)medium->p;
    bad_pointer("live medium block + 16", m + 16, invalid_free, invalid_realloc);
    bad_pointer("live medium block + 64", m + 64, invalid_free, invalid_realloc);
    forge_status_word(medium, m + 64, m);
    bad_pointer("live medium block + 64 with the block's status word before it", m + 64, invalid_free,
                invalid_realloc);
    unforge();
    forge_status_word(medium, m + 64, l);
    bad_pointer("live medium block + 64 with a small block's status word before it", m + 64, invalid_free,
                invalid_realloc);
    unforge();

    tu_medium_chain chain;
    if (CHECK(tu_medium_chain_make(&chain, 20000))) {
        CHECK_EQ_INT(FastMM_FreeMem(chain.middle), 0);
        tu_medium_chain_forget(&chain, chain.middle);
        bad_pointer("freed medium block", chain.middle, double_free, realloc_freed);
        tu_medium_chain_release(&chain);
    }

    for (size_t i = 0; i < live_count; i++)
        CHECK_MSG(FastMM_FreeMem(lives[i].p) == 0, "freeing live %s block", lives[i].name);
    live_count = 0;
    section_end("bad pointers", s);
}

/* ------------------------------------------------------------------------------------------------
 * f. Erase modes
 * ---------------------------------------------------------------------------------------------- */

/* Blocks of the tested size beside the freed one: more than a span of the largest small blocks holds,
 * so that the freed block's span is well filled whichever size is tested. */
#define ERASE_NEIGHBOURS 64

static void test_erase_modes(void)
{
    section_counts s = section_start("f. erase modes through both bodies");
    static const size_t sizes[] = {0, 1, 15, 100, 1000, 2622, 3000, 20000};
    FastMM_BeginEraseAllocatedBlockContent();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (size_t k = 0; k < 2; k++) {
            const body *b = bodies[k];
            /* The block comes back dirty from an earlier life, so the fill is this body's work. */
            void *p = b->get_mem(sizes[i]);
            if (!AGREE(p != NULL, "GetMem(%zu) via %s", sizes[i], b->name))
                continue;
            size_t usable = FastMM_BlockMaximumUserBytes(p);
            size_t bad = first_byte_not(p, usable, 0x90);
            AGREE(bad == SIZE_MAX, "erase allocated: GetMem(%zu) via %s: byte %zu of %zu is 0x%02x", sizes[i], b->name,
                  bad, usable, bad == SIZE_MAX ? 0 : ((uint8_t *)p)[bad]);
            memset(p, 0x11, usable);
            b->free_mem(p);
            void *q = b->get_mem(sizes[i]);
            if (!AGREE(q != NULL, "GetMem(%zu) via %s", sizes[i], b->name))
                continue;
            bad = first_byte_not(q, usable, 0x90);
            AGREE(bad == SIZE_MAX, "erase allocated: GetMem(%zu) via %s after a dirty free: byte %zu is 0x%02x",
                  sizes[i], b->name, bad, bad == SIZE_MAX ? 0 : ((uint8_t *)q)[bad]);
            b->free_mem(q);
        }
    }
    CHECK_EQ_INT(FastMM_EndEraseAllocatedBlockContent(), 0);

    FastMM_BeginEraseFreedBlockContent();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i] > TU_MAX_SMALL_USER) /* only a freed small block is certain to stay readable */
            continue;
        for (size_t k = 0; k < 2; k++) {
            const body *b = bodies[k];
            /* Neighbours keep the span in use, so the freed block stays readable memory, and not nearly
             * empty; their GetMem calls fill the thread's bin of the class. So the free meets a cache
             * that would take the block outside erase mode: the mode must keep both bodies off it. */
            void *neighbours[ERASE_NEIGHBOURS];
            int have_neighbours = 1;
            for (size_t n = 0; n < ERASE_NEIGHBOURS; n++)
                have_neighbours &= (neighbours[n] = c_body.get_mem(sizes[i])) != NULL;
            void *p = c_body.get_mem(sizes[i]);
            if (!AGREE(p != NULL && have_neighbours, "GetMem(%zu)", sizes[i]))
                continue;
            size_t usable = FastMM_BlockMaximumUserBytes(p);
            memset(p, 0x11, usable);
            AGREE(b->free_mem(p) == 0, "erase freed: FreeMem via %s of a %zu-byte block", b->name, sizes[i]);
            /* The first pointer now links the free list. */
            size_t bad = first_byte_not((uint8_t *)p + sizeof(void *), usable - sizeof(void *), 0x80);
            AGREE(bad == SIZE_MAX, "erase freed: FreeMem via %s of a %zu-byte block: byte %zu is 0x%02x", b->name,
                  sizes[i], bad + sizeof(void *), bad == SIZE_MAX ? 0 : ((uint8_t *)p)[bad + sizeof(void *)]);
            for (size_t n = 0; n < ERASE_NEIGHBOURS; n++)
                c_body.free_mem(neighbours[n]);
        }
    }
    CHECK_EQ_INT(FastMM_EndEraseFreedBlockContent(), 0);
    section_end("erase modes", s);
}

/* ------------------------------------------------------------------------------------------------
 * g. Debug mode
 * ---------------------------------------------------------------------------------------------- */

#define DEBUG_BLOCKS 300

static void test_debug_mode(void)
{
    section_counts s = section_start("g. debug mode through both bodies");
    tu_events_reset();
    if (!CHECK_EQ_INT(FastMM_EnterDebugMode(), 1))
        return;
    const size_t max_small_user = tu_debug_max_small_user(TU_DEBUG_DEFAULT_DEPTH);
    static void *blocks[DEBUG_BLOCKS];
    static size_t sizes[DEBUG_BLOCKS];
    tu_rng rng;
    tu_rng_seed(&rng, SEED);
    for (size_t i = 0; i < DEBUG_BLOCKS; i++) {
        const body *b = bodies[i & 1];
        size_t n = (i % 4 == 3) ? tu_rng_log_range(&rng, 1, 70000) : tu_rng_range(&rng, 0, max_small_user);
        void *p = b->get_mem(n);
        sizes[i] = n;
        blocks[i] = p;
        if (!AGREE(p != NULL, "debug mode: GetMem(%zu) via %s returned NULL", n, b->name))
            continue;
        size_t bad = first_byte_not(p, n, TU_DEBUG_ALLOCATED_FILL);
        AGREE(tu_is_debug_block(p) && tu_debug_user_size(p) == n && tu_debug_checksums_match(p) && bad == SIZE_MAX,
              "debug mode: GetMem(%zu) via %s = %p: status word %u, user size %zu, checksums %d, fill wrong at %zd", n,
              b->name, p, tu_status_word(p), tu_debug_user_size(p), tu_debug_checksums_match(p),
              bad == SIZE_MAX ? (ptrdiff_t)-1 : (ptrdiff_t)bad);
        tu_pattern_fill(p, n, tu_pattern_key(SEED, i, 7));
    }
    /* Freed in another order, each by the body that did not allocate it. */
    for (size_t j = 0; j < DEBUG_BLOCKS; j++) {
        size_t i = (j * 7) % DEBUG_BLOCKS;
        const body *b = bodies[(i & 1) ^ 1];
        void *p = blocks[i];
        if (!p)
            continue;
        size_t n = sizes[i];
        size_t bad = tu_pattern_find_mismatch(p, 0, n, tu_pattern_key(SEED, i, 7));
        AGREE(bad == SIZE_MAX, "debug mode: %zu-byte block %p changed at %zu before its free", n, p, bad);
        int freed = b->free_mem(p);
        AGREE(freed == 0, "debug mode: FreeMem via %s of a %zu-byte debug block returned %d", b->name, n, freed);
        if (n <= max_small_user) { /* a freed small outer block stays in place in debug mode */
            size_t wrong = tu_debug_freed_mismatch(p, n, marker());
            AGREE(tu_status_word(p) == TU_DEBUG_FREED && wrong == SIZE_MAX,
                  "debug mode: after FreeMem via %s, %zu-byte block %p: status word %u, freed pattern wrong at %zd",
                  b->name, n, p, tu_status_word(p), wrong == SIZE_MAX ? (ptrdiff_t)-1 : (ptrdiff_t)wrong);
        }
    }
    CHECK_MSG(tu_events_total() == 0, "%ld events during debug-mode allocations", (long)tu_events_total());

    /* A double free and a reallocation of a freed block, through both bodies. */
    void *twice = fm5_c_get_mem(200);
    if (CHECK(twice != NULL) && CHECK_EQ_INT(fm5_c_free_mem(twice), 0)) {
        event_seen a = call_free(&asm_body, twice);
        event_seen c = call_free(&c_body, twice);
        compare_events("FreeMem", "freed debug block", twice, 0, &a, &c, KIND_BIT(FastMM_EventDoubleFree));
        a = call_realloc(&asm_body, twice, 300);
        c = call_realloc(&c_body, twice, 300);
        compare_events("ReallocMem", "freed debug block", twice, 300, &a, &c,
                       KIND_BIT(FastMM_EventReallocOfFreedBlock));
    }

    /* Reallocation of a live debug block, through both bodies. */
    tu_events_reset();
    static const size_t resizes[][2] = {{100, 300}, {300, 100}, {100, 100}, {1000, 5000}, {5000, 50}};
    for (size_t i = 0; i < sizeof resizes / sizeof resizes[0]; i++) {
        for (size_t k = 0; k < 2; k++) {
            const body *b = bodies[k];
            size_t n = resizes[i][0], m = resizes[i][1];
            void *p = b->get_mem(n);
            if (!AGREE(p != NULL, "debug mode: GetMem(%zu) via %s", n, b->name))
                continue;
            uint64_t key = tu_pattern_key(SEED, n, m);
            tu_pattern_fill(p, n, key);
            void *r = b->realloc_mem(p, m);
            if (!AGREE(r != NULL, "debug mode: ReallocMem(%zu, %zu) via %s returned NULL", n, m, b->name)) {
                b->free_mem(p);
                continue;
            }
            size_t bad = tu_pattern_find_mismatch(r, 0, n < m ? n : m, key);
            AGREE(tu_is_debug_block(r) && tu_debug_user_size(r) == m && bad == SIZE_MAX,
                  "debug mode: ReallocMem(%zu, %zu) via %s: debug block %d, user size %zu, content wrong at %zd", n, m,
                  b->name, tu_is_debug_block(r), tu_debug_user_size(r), bad == SIZE_MAX ? (ptrdiff_t)-1 : (ptrdiff_t)bad);
            AGREE(b->free_mem(r) == 0, "debug mode: FreeMem via %s after ReallocMem", b->name);
        }
    }

    /* Blocks allocated in debug mode are freed after it by either body. */
    void *survivors[2] = {fm5_c_get_mem(123), FastMM_GetMem(4567)};
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    for (size_t k = 0; k < 2; k++)
        if (CHECK(survivors[k] != NULL))
            AGREE(bodies[k]->free_mem(survivors[k]) == 0, "FreeMem via %s of a debug block after debug mode",
                  bodies[k]->name);

    /* After debug mode, a freed debug block at the head of its class is reused by either body alike: the
     * outer block itself, as an ordinary live small block. Each body gets its own freshly freed block,
     * set up the same way. */
    for (size_t k = 0; k < 2; k++) {
        const body *b = bodies[k];
        CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
        void *d = fm5_c_get_mem(100);
        CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
        if (!CHECK(d != NULL))
            continue;
        CHECK_EQ_INT(fm5_c_free_mem(d), 0);
        void *outer = (uint8_t *)d - TU_DEBUG_HEADER_SIZE;
        size_t outer_size = 100 + TU_DEBUG_HEADER_SIZE + tu_debug_footer_size(TU_DEBUG_DEFAULT_DEPTH);
        void *p = b->get_mem(outer_size);
        if (!AGREE(p != NULL, "GetMem(%zu) via %s after debug mode", outer_size, b->name))
            continue;
        unsigned status = tu_status_word(p);
        AGREE(p == outer && (status & (FM5_STATUS_SMALL | FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO)) == FM5_STATUS_SMALL,
              "GetMem(%zu) via %s after debug mode: %p with status word 0x%x; the freed debug block's outer block "
              "is %p", outer_size, b->name, p, status, outer);
        AGREE(b->free_mem(p) == 0, "FreeMem via %s of a reused debug block", b->name);
    }
    CHECK_MSG(tu_events_total() == 0, "%ld events in and after debug mode without misuse", (long)tu_events_total());
    section_end("debug mode", s);
}

int main(void)
{
    tu_init("test_asm_twins");
    fm5_initialize();
    tu_events_install(TU_KEEP_LAST_EVENT);
    AddVectoredExceptionHandler(1, report_access_violation);
    check_the_build();
    make_guarded_page();

    unsigned long long start = tu_ms();
    test_checker();
    test_fills();
    test_get_free();
    test_bad_pointers();
    test_realloc_rule();
    test_proved_free();
    test_erase_modes();
    test_debug_mode();

    printf("test_asm_twins (%s, %s build): %llu cases compared, %llu mismatches, %llu ms\n", TU_ARCH, BUILD_NAME,
           cases_compared, mismatches, tu_ms() - start);
    CHECK_MSG(mismatches == 0, "%llu mismatches", mismatches);
    return test_finish();
}
