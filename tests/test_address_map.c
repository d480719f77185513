/*
 * test_address_map — the address map's runs, and the single look-up that small-block checks make with
 * them (src/base/address_map.h, src/blocks/pointer_checks.h).
 *
 * On address space the test reserves (no fm5 memory lies there):
 *   - a region recorded with fm5_address_map_add has its kind in its first granule's byte and, in every
 *     later granule, FM5_GRANULE_INSIDE with the count of granules before it, capped at
 *     FM5_GRANULE_RUN_LIMIT; fm5_granule_run_start goes back exactly that far;
 *   - fm5_address_map_extend continues the runs from the region's last granule; a removal leaves 0;
 *   - fm5_small_span_header_is_ours accepts a header from the run start up to the block, and refuses
 *     one a byte lower, one that would overlap the block, and any in a granule that is not fm5's.
 * On real small blocks of several classes: every live block's span is found, and a status word forged
 * to lead below its region (the largest line offset) or onto the block itself (offset 0) is refused by
 * FreeMem, ReallocMem and the size query with one event each; every block keeps its content and frees.
 * On a granule below 512 KB made fm5's: a status word whose line offset leads below address 0 is
 * refused the same way, not followed (where the OS grants such an address: Win32 and the host, not
 * Win64 under Wine, which keeps the low 1 MB for itself; the test says which).
 * Runs on both Windows builds (under Wine) and on the host build.
 */
#include "test_util.h"

#include "api/startup.h"
#include "base/address_map.h"
#include "blocks/pointer_checks.h"

#define SEED 0xADD12E55ull
#define GRANULE ((uintptr_t)1 << FM5_GRANULE_SHIFT)
#define REGION_GRANULES 70u   /* past the run limit, so that the cap is tested */
#define EXTRA_GRANULES 2u
#define STATUS_FLAG_BITS 3u

static size_t capped(size_t run)
{
    return run < FM5_GRANULE_RUN_LIMIT ? run : FM5_GRANULE_RUN_LIMIT;
}

/* The bytes of `granules` granules from `base`, the first of kind `first_kind`, runs from `first_run`. */
static void check_runs(uintptr_t base, size_t granules, unsigned first_kind, size_t first_run, const char *what)
{
    size_t wrong = 0;
    for (size_t i = 0; i < granules; i++) {
        uintptr_t granule = base + i * GRANULE;
        unsigned kind = i == 0 ? first_kind : FM5_GRANULE_INSIDE;
        size_t run = capped(first_run + i);
        unsigned expected = kind | (unsigned)(run << FM5_GRANULE_RUN_SHIFT);
        unsigned owner = fm5_granule_owner(granule + GRANULE / 2);
        uintptr_t start = fm5_granule_run_start(granule + GRANULE - 1, owner);
        if (owner != expected || start != granule - run * GRANULE) {
            if (wrong++ < 5)
                CHECK_MSG(0, "%s: granule %zu has byte %#x (expected %#x), run start %#llx (expected %#llx)", what,
                          i, owner, expected, (unsigned long long)start,
                          (unsigned long long)(granule - run * GRANULE));
        }
    }
    CHECK_MSG(wrong == 0, "%s: %zu of %zu granules wrong", what, wrong, granules);
}

static void test_map_runs(void)
{
    /* Reserved, never touched: the map only records addresses. */
    size_t reserve_bytes = (REGION_GRANULES + EXTRA_GRANULES + 2) * GRANULE;
    char *reserved = tu_os_reserve_inaccessible(NULL, reserve_bytes);
    CHECK(reserved != NULL);
    if (!reserved)
        return;
    uintptr_t base = ((uintptr_t)reserved + GRANULE - 1) & ~(GRANULE - 1);
    CHECK_EQ_SIZE(fm5_granule_owner(base), FM5_GRANULE_NOT_OURS);

    CHECK(fm5_address_map_add((void *)base, REGION_GRANULES * GRANULE, FM5_GRANULE_MEDIUM_SPAN));
    check_runs(base, REGION_GRANULES, FM5_GRANULE_MEDIUM_SPAN, 0, "a new region");
    CHECK_EQ_SIZE(fm5_granule_owner(base + REGION_GRANULES * GRANULE), FM5_GRANULE_NOT_OURS);

    /* The header check, with fake block addresses: it reads the map, never the memory. */
    uintptr_t user = base + 3 * GRANULE + 4096;
    CHECK(fm5_small_span_header_is_ours((const fm5_small_span *)base, (void *)user));
    CHECK(fm5_small_span_header_is_ours((const fm5_small_span *)(user - 64), (void *)user));
    CHECK(!fm5_small_span_header_is_ours((const fm5_small_span *)(base - 64), (void *)user));
    CHECK(!fm5_small_span_header_is_ours((const fm5_small_span *)(user - 32), (void *)user));
    CHECK(!fm5_small_span_header_is_ours((const fm5_small_span *)user, (void *)user));
    /* A block at a granule's first byte: its status word, and so the proof, is in the granule before. */
    user = base + 3 * GRANULE;
    CHECK(fm5_small_span_header_is_ours((const fm5_small_span *)(user - GRANULE - 64), (void *)user));
    /* Past the cap the run start is 63 granules back, not the region's first granule. */
    user = base + 68 * GRANULE + 512;
    uintptr_t lowest = base + (68 - FM5_GRANULE_RUN_LIMIT) * GRANULE;
    CHECK(fm5_small_span_header_is_ours((const fm5_small_span *)lowest, (void *)user));
    CHECK(!fm5_small_span_header_is_ours((const fm5_small_span *)(lowest - 64), (void *)user));

    CHECK(fm5_address_map_extend((void *)(base + REGION_GRANULES * GRANULE), EXTRA_GRANULES * GRANULE));
    check_runs(base + REGION_GRANULES * GRANULE, EXTRA_GRANULES, FM5_GRANULE_INSIDE, REGION_GRANULES,
               "an extension");
    fm5_address_map_remove((void *)base, (REGION_GRANULES + EXTRA_GRANULES) * GRANULE);

    /* A short region and its extension: runs below the cap go on by one. */
    CHECK(fm5_address_map_add((void *)base, 3 * GRANULE, FM5_GRANULE_LARGE_BLOCK));
    CHECK(fm5_address_map_extend((void *)(base + 3 * GRANULE), 2 * GRANULE));
    check_runs(base, 5, FM5_GRANULE_LARGE_BLOCK, 0, "a large block extended");
    CHECK_EQ_SIZE(fm5_granule_owner(base), FM5_GRANULE_LARGE_BLOCK);
    fm5_address_map_remove((void *)base, 5 * GRANULE);

    size_t left = 0;
    for (size_t i = 0; i < REGION_GRANULES + EXTRA_GRANULES; i++)
        left += fm5_granule_owner(base + i * GRANULE) != FM5_GRANULE_NOT_OURS;
    CHECK_MSG(left == 0, "%zu granules still fm5's after the removals", left);
    /* The header check trusts nothing once the granule is gone. */
    CHECK(!fm5_status_word_is_ours((void *)(base + 3 * GRANULE + 4096)));
    tu_os_unmap(reserved, reserve_bytes);
}

/* Calls FreeMem, ReallocMem and the size query on `p`, whose status word is forged: each must refuse it
 * with one event. Returns how many did. */
static unsigned refusals(void *p, size_t usable)
{
    unsigned refused = 0;
    tu_events_reset();
    refused += FastMM_FreeMem(p) == -1 && tu_events_total() == 1;
    tu_events_reset();
    refused += FastMM_ReallocMem(p, usable) == NULL && tu_events_total() == 1;
    tu_events_reset();
    refused += FastMM_BlockMaximumUserBytes(p) == 0 && tu_events_total() == 1;
    tu_events_reset();
    return refused;
}

#define BLOCKS 600

static void test_forged_offsets(void)
{
    static const size_t sizes[] = { 8, 40, 200, 1000, 2400 };
    static char *blocks[BLOCKS];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = sizes[s];
        for (size_t i = 0; i < BLOCKS; i++) {
            blocks[i] = FastMM_GetMem(size);
            CHECK(blocks[i] != NULL);
            if (!blocks[i])
                return;
            tu_pattern_fill(blocks[i], size, SEED + s * BLOCKS + i);
        }
        size_t found = 0, refused = 0, tried = 0;
        for (size_t i = 0; i < BLOCKS; i++) {
            char *p = blocks[i];
            unsigned own = tu_status_word(p);
            found += fm5_status_word_is_ours(p) && fm5_small_block_span(p, own) != NULL;
            const uint16_t forged[2] = {
                (uint16_t)(own | 0xFFFFu << STATUS_FLAG_BITS),         /* the farthest header, 512 KB back */
                (uint16_t)(own & ((1u << STATUS_FLAG_BITS) - 1)),      /* a header over the block itself */
            };
            for (int f = 0; f < 2; f++) {
                if (forged[f] == own)
                    continue;
                uint16_t saved;
                memcpy(&saved, p - TU_SMALL_HEADER, 2);
                memcpy(p - TU_SMALL_HEADER, &forged[f], 2);
                refused += refusals(p, size);
                tried += 3;
                memcpy(p - TU_SMALL_HEADER, &saved, 2);
            }
        }
        CHECK_MSG(found == BLOCKS, "size %zu: the span of %zu of %d live blocks found", size, found, BLOCKS);
        CHECK_MSG(refused == tried, "size %zu: %zu of %zu calls on forged status words refused with one event", size,
                  refused, tried);
        for (size_t i = 0; i < BLOCKS; i++) {
            CHECK_PATTERN(blocks[i], size, SEED + s * BLOCKS + i);
            CHECK_MSG(FastMM_FreeMem(blocks[i]) == 0, "size %zu: block %zu did not free", size, i);
        }
    }
}

/* The lowest 64 KB-aligned address below 512 KB that the OS lets the test have, committed, or NULL. */
static char *map_low_granule(void)
{
    for (uintptr_t address = GRANULE; address < ((uintptr_t)512 << 10); address += GRANULE) {
        char *p = tu_os_reserve_inaccessible((void *)address, GRANULE);
        if (!p)
            continue;
        if (tu_os_set_access(p, GRANULE, 1))
            return p;
        tu_os_unmap(p, GRANULE);
    }
    return NULL;
}

/* A block in a granule so low that the largest line offset puts its span header below address 0: the
 * check must compare, not read there. The granule is recorded as a medium span's, as a real small
 * span's granule is. */
static void test_wrapped_header(void)
{
    char *low = map_low_granule();
    if (!low) {
        printf("test_address_map: no granule below 512 KB was granted here; the wrapped header is not tried\n");
        return;
    }
    CHECK(fm5_address_map_add(low, GRANULE, FM5_GRANULE_MEDIUM_SPAN));
    char *p = low + 4096;
    const unsigned largest_offset = 0xFFFFu >> STATUS_FLAG_BITS;
    CHECK((uintptr_t)largest_offset << FM5_SMALL_LINE_SHIFT > (uintptr_t)p);
    uint16_t forged = (uint16_t)(FM5_STATUS_SMALL | largest_offset << STATUS_FLAG_BITS);
    memcpy(p - TU_SMALL_HEADER, &forged, 2);
    tu_pattern_fill(p, 256, SEED);
    CHECK(!fm5_small_block_span(p, forged));
    unsigned refused = refusals(p, 64);
    CHECK_MSG(refused == 3, "a header below address 0: %u of 3 calls refused with one event", refused);
    CHECK_PATTERN(p, 256, SEED);
    CHECK(tu_status_word(p) == forged);
    fm5_address_map_remove(low, GRANULE);
    tu_os_unmap(low, GRANULE);
    printf("test_address_map: a header below address 0 refused at %p\n", (void *)p);
}

int main(void)
{
    tu_init("test_address_map");
    /* fm5_static is not a DLL: nothing initializes it on load. */
    fm5_initialize();
    tu_events_install(0);
    test_map_runs();
    test_forged_offsets();
    test_wrapped_header();
    return test_finish();
}
