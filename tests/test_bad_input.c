/*
 * test_bad_input — misuse is reported, never fatal, and changes nothing.
 *
 * For every pointer fm5 did not hand out (NULL, other heaps, VirtualAlloc memory, the stack, a
 * global, interior and misaligned pointers into live small/medium/large blocks, blocks already
 * freed, and foreign memory dressed up with a copy of a real block's header):
 *   - FastMM_FreeMem returns -1, FastMM_ReallocMem and fm5_realloc return NULL, the size queries
 *     return 0, and fm5_free returns quietly;
 *   - each of them records one event of the right kind whose Pointer is the bad pointer and whose
 *     Text shows the pointer in hexadecimal;
 *   - live blocks of each kind, filled with patterns beforehand, keep every byte, can still be
 *     resized and freed, the allocated byte count does not move, and new requests are served.
 * A block freed twice, with nothing allocated in between, is reported as a double free (and a
 * reallocation of it as a reallocation of a freed block).
 * Every address around (160 bytes either side) and inside blocks of each kind, in runs of three with
 * the middle one freed, is refused by FreeMem (and, near the edges, ReallocMem and the size query):
 * in release mode, in debug mode (where the outer block's start, 64 bytes before the debug block, was
 * once accepted), and on the same debug blocks after debug mode ends; every live block keeps its
 * content and size.
 * For every small class, every aligned pointer inside a block, behind two bytes forged into a status
 * word that leads to the block's own span, is refused: only the block-boundary test can tell.
 * Requests that cannot be met (sizes near SIZE_MAX, calloc overflow, past the memory usage limit)
 * return NULL with the process intact; the first limit failure raises the limit once by 32 MB.
 */
#include "test_util.h"

#define SEED 0xBAD1B9ull
#define KIND_BIT(k) (1u << (k))

typedef struct live {
    void *p;
    size_t size;
    size_t usable;
    uint64_t key;
} live;

static live lives[3];
static size_t allocated_with_lives;

static void make_lives(void)
{
    static const size_t sizes[3] = {100, 20000, 700000};
    for (size_t i = 0; i < 3; i++) {
        lives[i].size = sizes[i];
        lives[i].p = FastMM_GetMem(sizes[i]);
        CHECK(lives[i].p != NULL);
        lives[i].usable = FastMM_BlockMaximumUserBytes(lives[i].p);
        lives[i].key = tu_pattern_key(SEED, i, 0);
        tu_pattern_fill(lives[i].p, lives[i].usable, lives[i].key);
    }
}

/* The live blocks are intact, nothing was freed or leaked by the bad call (the allocated byte count
 * is what it was before), and fm5 still serves. */
static void check_unharmed(const char *after, size_t allocated_before)
{
    for (size_t i = 0; i < 3; i++) {
        size_t bad = tu_pattern_find_mismatch(lives[i].p, 0, lives[i].usable, lives[i].key);
        CHECK_MSG(bad == SIZE_MAX, "after %s: live %zu-byte block %p changed at byte %zu", after, lives[i].size,
                  lives[i].p, bad);
        CHECK_MSG(FastMM_BlockMaximumUserBytes(lives[i].p) == lives[i].usable, "after %s: live block %p resized",
                  after, lives[i].p);
    }
    size_t allocated = tu_allocated_bytes();
    CHECK_MSG(allocated == allocated_before, "after %s: allocated bytes %zu, expected %zu", after, allocated,
              allocated_before);
    static const size_t probe[] = {24, 5000, 600000};
    for (size_t i = 0; i < 3; i++) {
        void *p = FastMM_GetMem(probe[i]);
        CHECK_MSG(p != NULL, "after %s: FastMM_GetMem(%zu) failed", after, probe[i]);
        if (p) {
            memset(p, 0x5A, probe[i]);
            CHECK_MSG(FastMM_FreeMem(p) == 0, "after %s: FastMM_FreeMem of a new block failed", after);
        }
    }
}

/* One event of an accepted kind, naming the pointer. */
static void check_event(const char *call, const char *name, const void *bad, unsigned accepted_kinds)
{
    int kind = 0;
    const void *pointer = NULL;
    char text[TU_EVENT_TEXT];
    tu_events_last(&kind, &pointer, NULL, text, sizeof text);
    long total = tu_events_total();
    CHECK_MSG(total == 1, "%s(%s %p): %ld events recorded", call, name, bad, (long)total);
    if (total < 1)
        return;
    CHECK_MSG(kind > 0 && kind < 32 && (accepted_kinds & KIND_BIT(kind)), "%s(%s %p): event %s (%d)", call, name, bad,
              tu_event_kind_name(kind), kind);
    CHECK_MSG(pointer == bad, "%s(%s %p): event names %p", call, name, bad, pointer);
    if (bad)
        CHECK_MSG(tu_text_mentions_hex(text, (uintptr_t)bad), "%s(%s %p): text does not show the pointer: \"%s\"", call,
                  name, bad, text);
    else
        CHECK_MSG(text[0] != 0, "%s(%s): event without text", call, name);
}

#define FREE_KINDS KIND_BIT(FastMM_EventInvalidFree)
#define REALLOC_KINDS KIND_BIT(FastMM_EventInvalidRealloc)
#define QUERY_KINDS KIND_BIT(FastMM_EventInvalidQuery)

/* Every entry point on one bad pointer. Nothing is allocated until all calls are done, so that a
 * freed block under test cannot be handed out again in between. */
static void bad_pointer(const char *name, void *bad, unsigned free_kinds, unsigned realloc_kinds)
{
    size_t allocated_before = tu_allocated_bytes();
    tu_events_reset();
    CHECK_MSG(FastMM_FreeMem(bad) == -1, "FastMM_FreeMem(%s %p) did not fail", name, bad);
    check_event("FastMM_FreeMem", name, bad, free_kinds);

    tu_events_reset();
    void *q = FastMM_ReallocMem(bad, 100);
    CHECK_MSG(q == NULL, "FastMM_ReallocMem(%s %p) returned %p", name, bad, q);
    check_event("FastMM_ReallocMem", name, bad, realloc_kinds);

    if (bad) {
        tu_events_reset();
        fm5_free(bad);
        check_event("fm5_free", name, bad, free_kinds);

        tu_events_reset();
        q = fm5_realloc(bad, 100);
        CHECK_MSG(q == NULL, "fm5_realloc(%s %p) returned %p", name, bad, q);
        check_event("fm5_realloc", name, bad, realloc_kinds);
    } else {
        tu_events_reset();
        fm5_free(NULL);
        CHECK_MSG(tu_events_total() == 0, "fm5_free(NULL) recorded an event");
    }

    tu_events_reset();
    size_t size = FastMM_BlockMaximumUserBytes(bad);
    CHECK_MSG(size == 0, "FastMM_BlockMaximumUserBytes(%s %p) = %zu", name, bad, size);
    check_event("FastMM_BlockMaximumUserBytes", name, bad, QUERY_KINDS);
    CHECK_MSG(FastMM_BlockCurrentUserBytes(bad) == 0, "FastMM_BlockCurrentUserBytes(%s %p) != 0", name, bad);
    CHECK_MSG(fm5_usable_size(bad) == 0, "fm5_usable_size(%s %p) != 0", name, bad);

    check_unharmed(name, allocated_before);
}

static void foreign_pointer(const char *name, void *bad)
{
    bad_pointer(name, bad, FREE_KINDS, REALLOC_KINDS);
}

/* ---------------------------------------------------------------------------------------------- */

static char global_area[4096] __attribute__((aligned(64)));

static void foreign_memory(void)
{
    SECTION("NULL");
    foreign_pointer("NULL", NULL);

    SECTION("other heaps");
    /* The process heap on Windows (HeapAlloc), the C library's malloc on the host. */
    void *heap = tu_foreign_alloc(256);
    if (CHECK(heap != NULL)) {
        memset(heap, 0, 256);
        foreign_pointer("system heap", heap);
        foreign_pointer("system heap + 16", (char *)heap + 16);
        tu_foreign_free(heap);
    }
    void *crt = malloc(100);
    if (CHECK(crt != NULL)) {
        foreign_pointer("malloc", crt);
        free(crt);
    }

    SECTION("memory mapped from the OS");
    char *va = (char *)tu_os_map(65536);
    if (CHECK(va != NULL)) {
        foreign_pointer("OS mapping", va);
        foreign_pointer("OS mapping + 64", va + 64);
        foreign_pointer("OS mapping + 4096", va + 4096);
        memset(va, 0xFF, 65536);
        foreign_pointer("OS mapping + 64 over 0xFF bytes", va + 64);
        foreign_pointer("OS mapping + 65520", va + 65520);
        tu_os_unmap(va, 65536);
    }

    SECTION("stack and global addresses");
    volatile char stack_area[512];
    memset((char *)stack_area, 0, sizeof stack_area);
    foreign_pointer("stack", (char *)stack_area);
    foreign_pointer("stack + 64", (char *)stack_area + 64);
    foreign_pointer("global", global_area);
    foreign_pointer("global + 64", global_area + 64);
    foreign_pointer("function", (void *)(uintptr_t)&foreign_pointer);
}

static void interior_pointers(void)
{
    static const size_t offsets[] = {1, 3, 8, 16, 64, 4096, 65536};
    for (size_t i = 0; i < 3; i++) {
        char title[96];
        snprintf(title, sizeof title, "interior and misaligned pointers of a live %s block",
                 tu_kind_name(tu_expected_kind(lives[i].size)));
        SECTION(title);
        char *p = (char *)lives[i].p;
        for (size_t k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
            if (offsets[k] >= lives[i].usable)
                continue;
            char name[64];
            snprintf(name, sizeof name, "%s block + %zu", tu_kind_name(tu_expected_kind(lives[i].size)), offsets[k]);
            foreign_pointer(name, p + offsets[k]);
        }
        char name[64];
        snprintf(name, sizeof name, "%s block - 1", tu_kind_name(tu_expected_kind(lives[i].size)));
        foreign_pointer(name, p - 1);
    }
}

/* FreeMem's block-boundary test is one multiplication (src/blocks/small_blocks.h,
 * fm5_small_is_block_start): x is a multiple of the block size b exactly when x * ceil(2^32 / b) mod
 * 2^32 is below ceil(2^32 / b), for every offset x below a span's reach (2^19 bytes). First that
 * arithmetic for every small block size and every offset. Then, for every small class, every aligned
 * address q inside the first and the last of a run of its blocks, with the two bytes before q made
 * to look like a live small block's status word that leads to the block's own span (as a program's
 * data may), so that only the boundary test can tell: FreeMem, ReallocMem and the size query must
 * refuse q with one event each, and every block keeps its content and frees normally. */
#define SPAN_REACH ((uint32_t)1 << 19)
#define CLASS_RUN_BYTES 32768u
/* A small block's status word (src/blocks/block_status.h, geometry.h): flags in the low 3 bits, above
 * them the distance in 64-byte lines from the block's line back to its span. */
#define STATUS_FLAG_BITS 3u
#define LINE_BYTES 64u

static void every_class_interior_pointers(void)
{
    SECTION("the one-multiplication boundary test, for every small block size and offset");
    for (size_t c = 0; c < TU_SMALL_CLASS_COUNT; c++) {
        size_t b = tu_small_classes[c];
        uint32_t r = (uint32_t)((((uint64_t)1 << 32) + b - 1) / b);
        unsigned wrong = 0;
        for (uint32_t x = 0; x < SPAN_REACH; x++)
            wrong += ((uint32_t)(x * r) < r) != (x % b == 0);
        CHECK_MSG(wrong == 0, "block size %zu: the test is wrong at %u offsets", b, wrong);
    }

    SECTION("aligned interior pointers of every small class, behind a status word of their span");
    static void *run[CLASS_RUN_BYTES / 8 + 2]; /* the smallest class has 8-byte blocks */
    for (size_t c = 0; c < TU_SMALL_CLASS_COUNT; c++) {
        size_t b = tu_small_classes[c];
        if (b % TU_DEFAULT_ALIGNMENT)
            continue; /* a class that only a smaller minimum alignment uses */
        size_t usable = b - TU_SMALL_HEADER, count = CLASS_RUN_BYTES / b + 2, lowest = 0, highest = 0;
        for (size_t i = 0; i < count; i++) {
            run[i] = FastMM_GetMem(usable);
            if (!CHECK_MSG(run[i] != NULL, "FastMM_GetMem(%zu) failed", usable)) {
                count = i;
                break;
            }
            tu_pattern_fill(run[i], usable, (uint64_t)b * 1000 + i);
            if ((uintptr_t)run[i] < (uintptr_t)run[lowest])
                lowest = i;
            if ((uintptr_t)run[i] > (uintptr_t)run[highest])
                highest = i;
        }
        size_t refused = 0, tried = 0;
        for (int end = 0; end < 2 && count; end++) {
            char *p = run[end ? highest : lowest];
            unsigned own = tu_status_word(p);
            for (size_t k = TU_DEFAULT_ALIGNMENT; k < usable; k += TU_DEFAULT_ALIGNMENT) {
                char *q = p + k;
                uintptr_t lines = ((uintptr_t)q / LINE_BYTES) - ((uintptr_t)p / LINE_BYTES);
                uint16_t forged = (uint16_t)(own + (lines << STATUS_FLAG_BITS)), saved;
                memcpy(&saved, q - TU_SMALL_HEADER, 2);
                memcpy(q - TU_SMALL_HEADER, &forged, 2);
                tried += 3;
                tu_events_reset();
                refused += FastMM_FreeMem(q) == -1 && tu_events_total() == 1;
                tu_events_reset();
                refused += FastMM_ReallocMem(q, usable) == NULL && tu_events_total() == 1;
                tu_events_reset();
                refused += FastMM_BlockMaximumUserBytes(q) == 0 && tu_events_total() == 1;
                memcpy(q - TU_SMALL_HEADER, &saved, 2);
            }
        }
        CHECK_MSG(refused == tried, "block size %zu: %zu of %zu interior calls refused with one event", b, refused,
                  tried);
        for (size_t i = 0; i < count; i++) {
            CHECK_PATTERN(run[i], usable, (uint64_t)b * 1000 + i);
            CHECK_MSG(FastMM_FreeMem(run[i]) == 0, "block size %zu: block %zu did not free", b, i);
        }
    }
    tu_events_reset();
}

/* Two small blocks of `size` that lie next to each other, hence in one span: while the keeper lives,
 * the span stays and the victim, once freed, stays a free block of it. Extra blocks are freed. */
static int adjacent_small_pair(size_t size, void **keeper, void **victim)
{
    void *pool[32];
    size_t n = 0;
    int found = 0;
    size_t stride = tu_small_block_size(size, TU_DEFAULT_ALIGNMENT);
    for (; n < 32 && !found; n++) {
        pool[n] = FastMM_GetMem(size);
        if (!pool[n])
            break;
        for (size_t i = 0; i < n && !found; i++) {
            uintptr_t a = (uintptr_t)pool[i], b = (uintptr_t)pool[n];
            if (a - b == stride || b - a == stride) {
                *keeper = pool[i];
                *victim = pool[n];
                pool[i] = pool[n] = NULL;
                found = 1;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        if (pool[i])
            FastMM_FreeMem(pool[i]);
    return found;
}

static void freed_blocks(void)
{
    const unsigned free_twice = KIND_BIT(FastMM_EventDoubleFree);
    const unsigned realloc_freed = KIND_BIT(FastMM_EventReallocOfFreedBlock);

    SECTION("a small block freed twice");
    void *keeper = NULL, *victim = NULL;
    if (CHECK(adjacent_small_pair(100, &keeper, &victim))) {
        CHECK_EQ_INT(FastMM_FreeMem(victim), 0);
        bad_pointer("freed small block", victim, free_twice, realloc_freed);
    }
    FastMM_FreeMem(keeper);

    SECTION("a small block freed twice through fm5_free");
    if (CHECK(adjacent_small_pair(300, &keeper, &victim))) {
        tu_events_reset();
        fm5_free(victim);
        CHECK_EQ_INT(tu_events_total(), 0);
        size_t allocated_before = tu_allocated_bytes();
        fm5_free(victim);
        check_event("fm5_free", "freed small block", victim, free_twice);
        check_unharmed("fm5_free twice", allocated_before);
    }
    FastMM_FreeMem(keeper);

    SECTION("a medium block freed twice");
    /* A freed medium block merges with free neighbours; between two used ones it stays itself. */
    tu_medium_chain c;
    if (CHECK(tu_medium_chain_make(&c, 20000))) {
        CHECK_EQ_INT(FastMM_FreeMem(c.middle), 0);
        tu_medium_chain_forget(&c, c.middle);
        bad_pointer("freed medium block", c.middle, free_twice, realloc_freed);
        tu_medium_chain_release(&c);
    }

    SECTION("a large block freed twice");
    /* Its memory went back to the system; fm5 may or may not remember it was a block. */
    void *large = FastMM_GetMem(900000);
    if (CHECK(large != NULL)) {
        CHECK_EQ_INT(FastMM_FreeMem(large), 0);
        bad_pointer("freed large block", large, FREE_KINDS | free_twice, REALLOC_KINDS | realloc_freed);
    }
}

/* ---------------------------------------------------------------------------------------------- */

static void unmeetable_requests(void)
{
    SECTION("requests that cannot be met");
    static const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 63, SIZE_MAX - 65535, SIZE_MAX / 2,
                                   SIZE_MAX / 2 + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "requests of %zu bytes", sizes[i]);
        void *p = FastMM_GetMem(sizes[i]);
        CHECK_MSG(p == NULL, "FastMM_GetMem(%zu) = %p", sizes[i], p);
        p = FastMM_AllocMem(sizes[i]);
        CHECK_MSG(p == NULL, "FastMM_AllocMem(%zu) = %p", sizes[i], p);
        p = fm5_malloc(sizes[i]);
        CHECK_MSG(p == NULL, "fm5_malloc(%zu) = %p", sizes[i], p);
        for (size_t l = 0; l < 3; l++) {
            p = FastMM_ReallocMem(lives[l].p, sizes[i]);
            CHECK_MSG(p == NULL, "FastMM_ReallocMem(live %zu, %zu) = %p", lives[l].size, sizes[i], p);
            p = fm5_realloc(lives[l].p, sizes[i]);
            CHECK_MSG(p == NULL, "fm5_realloc(live %zu, %zu) = %p", lives[l].size, sizes[i], p);
        }
        check_unharmed(name, allocated_with_lives);
    }
    void *p = fm5_malloc((size_t)-64);
    CHECK(p == NULL);
    /* calloc's count * size overflows: it must not wrap to a small block. */
    p = fm5_calloc(SIZE_MAX / 2, 4);
    CHECK(p == NULL);
    p = fm5_calloc(4, SIZE_MAX / 2);
    CHECK(p == NULL);
    p = fm5_calloc(SIZE_MAX / 4 + 1, 4);
    CHECK(p == NULL);
    p = fm5_calloc((SIZE_MAX >> (4 * sizeof(size_t))) + 2, (SIZE_MAX >> (4 * sizeof(size_t))) + 2);
    CHECK(p == NULL);
#if !TU_64BIT
    /* Larger than the free address space of a 32-bit process, without any overflow. */
    p = FastMM_GetMem(0xF0000000u);
    CHECK(p == NULL);
#endif
    check_unharmed("calloc overflow", allocated_with_lives);
}

static void memory_limit(void)
{
    SECTION("memory usage limit");
    const size_t mb = 1u << 20;
    CHECK_EQ_SIZE(FastMM_GetMemoryUsageLimit(), 0);
    size_t current = FastMM_GetCurrentMemoryUsage();
    CHECK_MSG(current >= lives[2].usable, "current usage %zu below a live large block's %zu", current,
              lives[2].usable);
    size_t limit = current + 16 * mb;
    FastMM_SetMemoryUsageLimit(limit);
    CHECK_EQ_SIZE(FastMM_GetMemoryUsageLimit(), limit);

    tu_events_reset();
    void *p = FastMM_GetMem(64 * mb);
    CHECK_MSG(p == NULL, "64 MB allocated past a limit 16 MB away");
    CHECK_MSG(tu_events_count(FastMM_EventMemoryLimitExceeded) >= 1, "no MemoryLimitExceeded event (%ld events)",
              (long)tu_events_total());
    /* FastMM5's grace: the first failure raises the limit once, so the program can still react. */
    CHECK_EQ_SIZE(FastMM_GetMemoryUsageLimit(), limit + 32 * mb);

    void *within = FastMM_GetMem(4 * mb);
    CHECK_MSG(within != NULL, "4 MB refused under the limit");
    if (within) {
        memset(within, 0x11, 4 * mb);
        CHECK_EQ_INT(FastMM_FreeMem(within), 0);
    }
    tu_events_reset();
    p = FastMM_GetMem(64 * mb);
    CHECK_MSG(p == NULL, "64 MB allocated past the raised limit");
    CHECK(tu_events_count(FastMM_EventMemoryLimitExceeded) >= 1);
    CHECK_EQ_SIZE(FastMM_GetMemoryUsageLimit(), limit + 32 * mb);
    p = FastMM_ReallocMem(lives[2].p, 64 * mb);
    CHECK_MSG(p == NULL, "a block grew to 64 MB past the limit");

    FastMM_SetMemoryUsageLimit(0);
    CHECK_EQ_SIZE(FastMM_GetMemoryUsageLimit(), 0);
    p = FastMM_GetMem(64 * mb);
    CHECK_MSG(p != NULL, "64 MB refused without a limit");
    if (p) {
        memset(p, 0x22, 64 * mb);
        CHECK_EQ_INT(FastMM_FreeMem(p), 0);
    }
    check_unharmed("memory limit", allocated_with_lives);
}

/* ---------------------------------------------------------------------------------------------- */

/* Foreign memory that starts with a byte-for-byte copy of the bytes before a real block: whatever
 * fm5 reads there looks right, so only knowing its own blocks tells the pointer apart. Last,
 * because an allocator that trusts headers may well crash here. */
static void forged_headers(void)
{
    SECTION("foreign memory with a copy of a real block's header");
    char *area = (char *)tu_os_map(4 * 65536);
    if (!CHECK(area != NULL))
        return;
    for (size_t i = 0; i < 3; i++) {
        const char *real = (const char *)lives[i].p;
        /* Same offset within a 64K region as the real block, so any address arithmetic matches. */
        char *forged = area + 65536 + ((uintptr_t)real & 0xFFFF);
        memcpy(forged - 64, real - 64, 128);
        char name[64];
        snprintf(name, sizeof name, "forged %s block", tu_kind_name(tu_expected_kind(lives[i].size)));
        foreign_pointer(name, forged);
    }
    tu_os_unmap(area, 4 * 65536);
}


/* ---- every address around and inside blocks, in both modes ------------------------------------- */

#define SWEEP_SIZES 12
#define SWEEP_EDGE 160   /* bytes swept at every address around a block's start and end */

typedef struct swept_block {
    char *p;
    size_t size;
    size_t usable;
    uint64_t key;
    int freed;
} swept_block;

static swept_block swept[SWEEP_SIZES * 3];

/* The addresses the program holds: the swept blocks not freed, and the test's long-lived blocks. */
static int is_live_user_pointer(const char *a)
{
    for (size_t i = 0; i < SWEEP_SIZES * 3; i++)
        if (!swept[i].freed && swept[i].p == a)
            return 1;
    for (size_t i = 0; i < 3; i++)
        if (lives[i].p == a)
            return 1;
    return 0;
}

/* One address that fm5 never handed out (or whose block is free): every entry point refuses it with one
 * event each. Returns the number of calls made. */
static unsigned long refuse_address(char *a, int also_realloc_and_query, unsigned long *failures)
{
    unsigned long calls = 1;
    if (FastMM_FreeMem(a) != -1 && ++*failures <= 20)
        CHECK_MSG(0, "FastMM_FreeMem(%p) succeeded on an address fm5 never handed out", (void *)a);
    if (also_realloc_and_query) {
        calls += 2;
        void *q = FastMM_ReallocMem(a, 24);
        if (q != NULL && ++*failures <= 20)
            CHECK_MSG(0, "FastMM_ReallocMem(%p) returned %p", (void *)a, q);
        if (FastMM_BlockMaximumUserBytes(a) != 0 && ++*failures <= 20)
            CHECK_MSG(0, "FastMM_BlockMaximumUserBytes(%p) answered for an address fm5 never handed out", (void *)a);
    }
    return calls;
}

static void sweep_blocks(const char *title)
{
    SECTION(title);
    tu_events_reset();
    unsigned long calls = 0, failures = 0;
    for (size_t i = 0; i < SWEEP_SIZES * 3; i++) {
        char *p = swept[i].p;
        size_t edge_end = swept[i].usable + SWEEP_EDGE;
        for (size_t offset = 0; offset < SWEEP_EDGE * 2; offset++) {
            char *a = p - SWEEP_EDGE + offset;
            if (!is_live_user_pointer(a))
                calls += refuse_address(a, (uintptr_t)a % TU_DEFAULT_ALIGNMENT == 0, &failures);
        }
        for (size_t offset = SWEEP_EDGE; offset < edge_end; offset += offset + 1 < swept[i].usable ? TU_DEFAULT_ALIGNMENT : 1) {
            char *a = p + offset;
            if (!is_live_user_pointer(a))
                calls += refuse_address(a, 0, &failures);
        }
    }
    CHECK_MSG(failures == 0, "%lu calls on bad addresses did not fail", failures);
    CHECK_MSG((unsigned long)tu_events_total() == calls, "%lu refused calls, %ld events", calls, (long)tu_events_total());
    for (size_t i = 0; i < SWEEP_SIZES * 3; i++) {
        if (swept[i].freed)
            continue;
        size_t bad = tu_pattern_find_mismatch(swept[i].p, 0, swept[i].size, swept[i].key);
        CHECK_MSG(bad == SIZE_MAX, "%s: live %zu-byte block %p changed at byte %zu", title, swept[i].size,
                  (void *)swept[i].p, bad);
        CHECK_MSG(FastMM_BlockCurrentUserBytes(swept[i].p) == swept[i].size ||
                      FastMM_BlockCurrentUserBytes(swept[i].p) == swept[i].usable,
                  "%s: live block %p lost its size", title, (void *)swept[i].p);
    }
    tu_events_reset();
}

/* Blocks of every kind in runs of three, the middle one freed: live blocks with a freed neighbour. In
 * debug mode each is a debug block, whose outer block starts 64 bytes before the address handed out:
 * that address is a bad pointer too. The blocks made in debug mode are swept again after it ends. */
static void address_sweeps(int debug)
{
    static const size_t sizes[SWEEP_SIZES] = {1, 15, 40, 64, 100, 1000, 2600, 2700, 20000, 100000, 558000, 600000};
    if (debug)
        FastMM_EnterDebugMode();
    for (size_t i = 0; i < SWEEP_SIZES * 3; i++) {
        swept_block *b = &swept[i];
        b->size = sizes[i / 3];
        b->p = FastMM_GetMem(b->size);
        CHECK(b->p != NULL);
        b->usable = FastMM_BlockMaximumUserBytes(b->p);
        b->key = tu_pattern_key(SEED, 1000 + i, debug);
        tu_pattern_fill(b->p, b->size, b->key);
        b->freed = 0;
    }
    for (size_t i = 1; i < SWEEP_SIZES * 3; i += 3) {
        CHECK_EQ_INT(FastMM_FreeMem(swept[i].p), 0);
        swept[i].freed = 1;
    }
    sweep_blocks(debug ? "every address around and inside debug blocks, in debug mode"
                       : "every address around and inside blocks, in release mode");
    if (debug) {
        CHECK_EQ_INT(FastMM_ScanDebugBlocksForCorruption(), 1);
        FastMM_ExitDebugMode();
        sweep_blocks("every address around and inside debug blocks, after debug mode");
    }
    for (size_t i = 0; i < SWEEP_SIZES * 3; i++)
        if (!swept[i].freed)
            CHECK_EQ_INT(FastMM_FreeMem(swept[i].p), 0);
}

int main(void)
{
    tu_init("test_bad_input");
    tu_events_install(TU_KEEP_LAST_EVENT);
    size_t baseline_bytes = tu_allocated_bytes();
    make_lives();
    allocated_with_lives = tu_allocated_bytes();
    CHECK_EQ_INT(tu_events_total(), 0);

    foreign_memory();
    interior_pointers();
    every_class_interior_pointers();
    freed_blocks();
    unmeetable_requests();
    memory_limit();
    forged_headers();
    address_sweeps(0);
    address_sweeps(1);

    SECTION("the live blocks are still ordinary blocks");
    for (size_t i = 0; i < 3; i++) {
        void *q = FastMM_ReallocMem(lives[i].p, lives[i].usable + 1);
        if (CHECK(q != NULL)) {
            CHECK_PATTERN(q, lives[i].usable, lives[i].key);
            lives[i].p = q;
        }
        CHECK_EQ_INT(FastMM_FreeMem(lives[i].p), 0);
    }
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    return test_finish();
}
