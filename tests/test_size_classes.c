/*
 * test_size_classes — every request size maps to the block FastMM5's tables say:
 *   - each size 0..2622 gets the smallest small class holding size + 2 bytes, with the alignment the
 *     class's position in its span gives it, under every minimum alignment 8/16/32/64;
 *   - around each of the 1024 medium bin sizes, the usable size is the bin size less the 8-byte
 *     header, and 558,904 is the largest medium request;
 *   - large blocks hold round_up(n + 64, 64K) - 64 bytes at an address that is 64 past a 64K
 *     boundary, and remember the exact requested size;
 *   - a class's small-block spans grow from FastMM5's minimum of 16 blocks by doubling to its optimal
 *     span.
 * The kind of every block is read from FastMM_WalkBlocks, and every byte of every block is written
 * while its neighbours are live, so a block that overlaps another shows up as a pattern mismatch.
 */
#include "test_util.h"

#define SEED 0x5153C1A55ull

typedef struct sized_block {
    void *p;
    size_t requested;
    size_t usable;
    uint64_t key;
} sized_block;

/* Checks one live block against the table and the walk, without touching its content. */
static void check_block_against_walk(const tu_walk *w, const sized_block *b, unsigned alignment)
{
    size_t n = b->requested;
    const FastMM_WalkBlockInfo *info = tu_walk_find(w, b->p);
    if (!CHECK_MSG(info != NULL, "block %p of %zu bytes missing from the walk", b->p, n))
        return;
    unsigned kind = tu_expected_kind(n);
    CHECK_MSG(info->Kind == kind, "%zu bytes: walk kind %s, expected %s", n, tu_kind_name(info->Kind),
              tu_kind_name(kind));
    CHECK_MSG(info->IsFree == 0, "%zu bytes: live block %p walks as free", n, b->p);
    CHECK_MSG(info->UsableSize == tu_expected_usable(n, alignment), "%zu bytes: walk usable %zu, expected %zu", n,
              info->UsableSize, tu_expected_usable(n, alignment));
    if (kind == FastMM_SmallBlock)
        CHECK_MSG(info->BlockSize == info->UsableSize + TU_SMALL_HEADER, "%zu bytes: small block size %zu, usable %zu",
                  n, info->BlockSize, info->UsableSize);
    else if (kind == FastMM_MediumBlock)
        CHECK_MSG(info->BlockSize == info->UsableSize + TU_MEDIUM_HEADER,
                  "%zu bytes: medium block size %zu, usable %zu", n, info->BlockSize, info->UsableSize);
    else
        CHECK_MSG(info->BlockSize >= info->UsableSize, "%zu bytes: large block size %zu < usable %zu", n,
                  info->BlockSize, info->UsableSize);
}

/* Allocates one block and checks what can be checked without a walk. */
static int allocate_checked(sized_block *b, size_t n, unsigned alignment, uint64_t key)
{
    b->p = FastMM_GetMem(n);
    b->requested = n;
    b->key = key;
    b->usable = 0;
    if (!CHECK_MSG(b->p != NULL, "FastMM_GetMem(%zu) failed", n))
        return 0;
    size_t expected = tu_expected_usable(n, alignment);
    b->usable = FastMM_BlockMaximumUserBytes(b->p);
    CHECK_MSG(b->usable == expected, "FastMM_BlockMaximumUserBytes for %zu bytes: %zu, expected %zu", n, b->usable,
              expected);
    size_t current = FastMM_BlockCurrentUserBytes(b->p);
    if (n > TU_MAX_MEDIUM_USER)
        CHECK_MSG(current == n, "FastMM_BlockCurrentUserBytes of a large block of %zu bytes: %zu", n, current);
    else
        CHECK_MSG(current == b->usable, "FastMM_BlockCurrentUserBytes of %zu bytes: %zu, maximum %zu", n, current,
                  b->usable);
    CHECK_MSG(fm5_usable_size(b->p) == b->usable, "fm5_usable_size for %zu bytes: %zu vs %zu", n,
              fm5_usable_size(b->p), b->usable);

    size_t need;
    if (n <= TU_MAX_SMALL_USER)
        need = tu_small_natural_alignment(tu_small_block_size(n, alignment), alignment);
    else
        need = 64;
    CHECK_MSG(tu_is_aligned(b->p, need), "%zu bytes at %p: not %zu-aligned", n, b->p, need);
    CHECK_MSG(tu_is_aligned(b->p, alignment), "%zu bytes at %p: below the minimum alignment %u", n, b->p,
              alignment);
    if (n > TU_MAX_MEDIUM_USER)
        CHECK_MSG(((uintptr_t)b->p & 0xFFFF) == 64, "large block of %zu bytes at %p is not 64 past a 64K boundary",
                  n, b->p);
    return 1;
}

/* Fills every block of the batch (all are live at once), then verifies them all and frees them. */
static void fill_verify_free(sized_block *blocks, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (blocks[i].p)
            tu_pattern_fill(blocks[i].p, blocks[i].usable, blocks[i].key);
    for (size_t i = 0; i < count; i++)
        if (blocks[i].p)
            CHECK_PATTERN(blocks[i].p, blocks[i].usable, blocks[i].key);
    for (size_t i = 0; i < count; i++) {
        if (blocks[i].p)
            CHECK_MSG(FastMM_FreeMem(blocks[i].p) == 0, "FastMM_FreeMem(%p) of %zu bytes failed", blocks[i].p,
                      blocks[i].requested);
        blocks[i].p = NULL;
    }
}

/* Every small size, all blocks live together, under the given minimum alignment. */
static void small_sizes(unsigned alignment)
{
    size_t count = TU_MAX_SMALL_USER + 1;
    sized_block *blocks = (sized_block *)calloc(count, sizeof *blocks);
    if (!CHECK(blocks != NULL))
        return;
    for (size_t n = 0; n < count; n++)
        allocate_checked(&blocks[n], n, alignment, tu_pattern_key(SEED, n, alignment));
    tu_walk w;
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    CHECK(w.result == 1);
    for (size_t n = 0; n < count; n++)
        if (blocks[n].p)
            check_block_against_walk(&w, &blocks[n], alignment);
    tu_walk_free(&w);
    fill_verify_free(blocks, count);
    free(blocks);
}

/* Allocates the given sizes in batches of bounded total size, walking once per batch. */
static void sizes_in_batches(const size_t *sizes, size_t count, unsigned alignment, size_t batch_bytes)
{
    sized_block *blocks = (sized_block *)calloc(count, sizeof *blocks);
    if (!CHECK(blocks != NULL))
        return;
    size_t start = 0;
    while (start < count) {
        size_t end = start, bytes = 0;
        while (end < count && (end == start || bytes + sizes[end] <= batch_bytes)) {
            bytes += sizes[end];
            end++;
        }
        for (size_t i = start; i < end; i++)
            allocate_checked(&blocks[i], sizes[i], alignment, tu_pattern_key(SEED, i, sizes[i]));
        tu_walk w;
        tu_walk_take(&w, TU_BLOCK_KINDS, 1);
        CHECK(w.result == 1);
        for (size_t i = start; i < end; i++)
            if (blocks[i].p)
                check_block_against_walk(&w, &blocks[i], alignment);
        tu_walk_free(&w);
        fill_verify_free(blocks + start, end - start);
        start = end;
    }
    free(blocks);
}

static void small_classes(void)
{
    SECTION("small: every size 0..2622");
    small_sizes(TU_DEFAULT_ALIGNMENT);

    /* The class list itself: the number of classes and the class a few sizes land in, spelled out
     * so that a mistake shared by the table above and fm5 still shows up somewhere. */
    CHECK_EQ_SIZE(TU_SMALL_CLASS_COUNT, TU_64BIT ? 51 : 61);
    CHECK_EQ_SIZE(tu_expected_usable(0, TU_DEFAULT_ALIGNMENT), TU_64BIT ? 14 : 6);
    CHECK_EQ_SIZE(tu_expected_usable(7, TU_DEFAULT_ALIGNMENT), 14);
    CHECK_EQ_SIZE(tu_expected_usable(20, TU_DEFAULT_ALIGNMENT), TU_64BIT ? 30 : 22);
    CHECK_EQ_SIZE(tu_expected_usable(161, TU_DEFAULT_ALIGNMENT), 174);
    CHECK_EQ_SIZE(tu_expected_usable(351, TU_DEFAULT_ALIGNMENT), 382);
    CHECK_EQ_SIZE(tu_expected_usable(1343, TU_DEFAULT_ALIGNMENT), 1470);
    CHECK_EQ_SIZE(tu_expected_usable(2622, TU_DEFAULT_ALIGNMENT), 2622);
}

static void boundaries(void)
{
    SECTION("small/medium and medium/large boundaries");
    static const struct {
        size_t n;
        unsigned kind;
        size_t usable;
    } cases[] = {
        {2621, FastMM_SmallBlock, 2622},   {2622, FastMM_SmallBlock, 2622},
        {2623, FastMM_MediumBlock, 2872},  {2624, FastMM_MediumBlock, 2872},
        {2872, FastMM_MediumBlock, 2872},  {2873, FastMM_MediumBlock, 3128},
        {558903, FastMM_MediumBlock, 558904}, {558904, FastMM_MediumBlock, 558904},
        {558905, FastMM_LargeBlock, 589760},  {589760, FastMM_LargeBlock, 589760},
        {589761, FastMM_LargeBlock, 655296},
    };
    size_t count = sizeof cases / sizeof cases[0];
    sized_block blocks[sizeof cases / sizeof cases[0]];
    for (size_t i = 0; i < count; i++) {
        CHECK_EQ_SIZE(tu_expected_usable(cases[i].n, TU_DEFAULT_ALIGNMENT), cases[i].usable);
        allocate_checked(&blocks[i], cases[i].n, TU_DEFAULT_ALIGNMENT, tu_pattern_key(SEED, 7, i));
        if (blocks[i].p)
            CHECK_MSG(blocks[i].usable == cases[i].usable, "%zu bytes: usable %zu, expected %zu", cases[i].n,
                      blocks[i].usable, cases[i].usable);
    }
    tu_walk w;
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    for (size_t i = 0; i < count; i++) {
        if (!blocks[i].p)
            continue;
        const FastMM_WalkBlockInfo *info = tu_walk_find(&w, blocks[i].p);
        if (CHECK_MSG(info != NULL, "%zu bytes: block not walked", cases[i].n))
            CHECK_MSG(info->Kind == cases[i].kind, "%zu bytes: kind %s, expected %s", cases[i].n,
                      tu_kind_name(info->Kind), tu_kind_name(cases[i].kind));
    }
    tu_walk_free(&w);
    fill_verify_free(blocks, count);
}

static void medium_bins(void)
{
    SECTION("medium: around each of the 1024 bin sizes");
    CHECK_EQ_SIZE(tu_medium_bin(0), 2880);
    CHECK_EQ_SIZE(tu_medium_bin(383), 100928);
    CHECK_EQ_SIZE(tu_medium_bin(384), 101184);
    CHECK_EQ_SIZE(tu_medium_bin(767), 297280);
    CHECK_EQ_SIZE(tu_medium_bin(768), 297792);
    CHECK_EQ_SIZE(tu_medium_bin(1023), 558912);

    /* bin - 9 and bin - 8 land in the bin (bin - 8 fills it exactly), bin - 7 in the next one; the
     * last bin's bin - 7 is 558,905, the first large size. */
    size_t *sizes = (size_t *)malloc(3 * TU_MEDIUM_BIN_COUNT * sizeof *sizes);
    if (!CHECK(sizes != NULL))
        return;
    size_t count = 0;
    for (size_t i = 0; i < TU_MEDIUM_BIN_COUNT; i++) {
        size_t bin = tu_medium_bin(i);
        sizes[count++] = bin - 9;
        sizes[count++] = bin - 8;
        sizes[count++] = bin - 7;
        CHECK_EQ_SIZE(tu_medium_block_size(bin - 8), bin);
        CHECK_EQ_SIZE(tu_medium_block_size(bin - 9), bin);
        if (i + 1 < TU_MEDIUM_BIN_COUNT)
            CHECK_EQ_SIZE(tu_medium_block_size(bin - 7), tu_medium_bin(i + 1));
    }
    /* Win32 has 2 GB of address space, and the blocks of a batch are live together. */
    sizes_in_batches(sizes, count, TU_DEFAULT_ALIGNMENT, 48u << 20);
    free(sizes);
}

static void large_sizes(void)
{
    SECTION("large sizes");
    static const size_t sizes[] = {
        558905, 600000, 655296, 655297, 1000000, 1u << 20, (1u << 20) + 1, (4u << 20) - 64, (4u << 20) - 63,
        10000000, (32u << 20) + 12345,
    };
    size_t count = sizeof sizes / sizeof sizes[0];
    for (size_t i = 0; i < count; i++)
        CHECK_MSG((tu_large_usable(sizes[i]) + TU_LARGE_HEADER) % 65536 == 0 && tu_large_usable(sizes[i]) >= sizes[i],
                  "table: %zu", sizes[i]);
    sizes_in_batches(sizes, count, TU_DEFAULT_ALIGNMENT, 64u << 20);
}

/* Under each minimum alignment, every small size gets an aligned block of the first class that is a
 * multiple of the alignment; medium and large blocks stay 64-aligned. */
static void alignments(void)
{
    static const unsigned values[] = {8, 16, 32, 64};
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        unsigned a = values[v];
        char title[96];
        snprintf(title, sizeof title, "minimum alignment %u", a);
        SECTION(title);
        unsigned before = FastMM_GetCurrentMinimumAddressAlignment();
        CHECK_EQ_INT(before, TU_DEFAULT_ALIGNMENT);
        if (!CHECK_EQ_INT(FastMM_EnterMinimumAddressAlignment(a), 0))
            continue;
        unsigned effective = a > TU_DEFAULT_ALIGNMENT ? a : TU_DEFAULT_ALIGNMENT;
        CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), effective);
        small_sizes(effective);
        static const size_t others[] = {2623, 5000, 70001, 300000, 558904, 558905, 2000000};
        sizes_in_batches(others, sizeof others / sizeof others[0], effective, 64u << 20);
        CHECK_EQ_INT(FastMM_ExitMinimumAddressAlignment(a), 0);
        CHECK_EQ_INT(FastMM_GetCurrentMinimumAddressAlignment(), TU_DEFAULT_ALIGNMENT);
    }

    /* The class table filtered by alignment, spelled out for a few sizes. */
    CHECK_EQ_SIZE(tu_expected_usable(5, 16), 14);
    CHECK_EQ_SIZE(tu_expected_usable(5, 32), 30);
    CHECK_EQ_SIZE(tu_expected_usable(5, 64), 62);
    CHECK_EQ_SIZE(tu_expected_usable(351, 64), 382);
    CHECK_EQ_SIZE(tu_expected_usable(383, 64), 446);
    CHECK_EQ_SIZE(tu_expected_usable(1471, 64), 1598);
}

/* The span holding `p` in a snapshot of the small-block spans, or NULL. */
static const FastMM_WalkBlockInfo *span_holding(const tu_walk *spans, const void *p)
{
    for (size_t i = 0; i < spans->count; i++) {
        const char *start = spans->items[i].Address;
        if ((const char *)p >= start && (const char *)p < start + spans->items[i].BlockSize)
            return &spans->items[i];
    }
    return NULL;
}

static int by_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* FastMM5's span sizes (at least 16 and ideally 64 blocks, at most 101,184 bytes), reached by
 * doubling: a class's first span holds 16 blocks and each next one twice the blocks of the span used
 * up before it, up to the optimal span. Spelled out for the 1,728-byte class, unused before this
 * section: 16 blocks make a 27,968-byte medium block, 32 blocks 55,616 and the optimal 58 blocks
 * 100,416, so 300 blocks take 16 + 32 + 5 x 58 (a thread cache's fill may feed up to 9 more). */
static void spans_grow(void)
{
    SECTION("small spans: 16 blocks first, then doubling up to the optimal span");
    enum { COUNT = 300, REQUEST = 1700 };
    static void *blocks[COUNT];
    for (size_t i = 0; i < COUNT; i++)
        if (!CHECK_MSG((blocks[i] = FastMM_GetMem(REQUEST)) != NULL, "FastMM_GetMem(%d) failed", REQUEST))
            return;
    tu_walk spans;
    tu_walk_take(&spans, FastMM_SmallBlockSpan, 0);
    size_t sizes[COUNT], span_count = 0;
    const void *seen[COUNT];
    for (size_t i = 0; i < COUNT; i++) {
        const FastMM_WalkBlockInfo *span = span_holding(&spans, blocks[i]);
        if (!CHECK_MSG(span != NULL, "block %p in no small-block span", blocks[i]))
            break;
        size_t k = 0;
        while (k < span_count && seen[k] != span->Address)
            k++;
        if (k == span_count) {
            seen[span_count] = span->Address;
            sizes[span_count++] = span->BlockSize;
        }
    }
    tu_walk_free(&spans);
    qsort(sizes, span_count, sizeof sizes[0], by_size);
    static const size_t expected[] = { 27968, 55616, 100416, 100416, 100416, 100416, 100416 };
    if (CHECK_EQ_SIZE(span_count, sizeof expected / sizeof expected[0]))
        for (size_t k = 0; k < span_count; k++)
            CHECK_MSG(sizes[k] == expected[k], "span %zu of the class: %zu bytes, expected %zu", k, sizes[k],
                      expected[k]);
    for (size_t i = 0; i < COUNT; i++)
        FastMM_FreeMem(blocks[i]);
}

int main(void)
{
    tu_init("test_size_classes");
    tu_events_install(TU_KEEP_LAST_EVENT);
    size_t baseline_bytes = tu_allocated_bytes();
    size_t baseline_blocks = tu_used_block_count();

    spans_grow();
    small_classes();
    boundaries();
    medium_bins();
    large_sizes();
    alignments();

    SECTION("nothing left allocated");
    FastMM_ProcessAllPendingFrees();
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_INT(tu_events_total(), 0);
    return test_finish();
}
