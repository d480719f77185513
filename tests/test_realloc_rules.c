/*
 * test_realloc_rules — FastMM_ReallocMem follows FastMM5's resizing rules:
 *
 *   small  (usable U): new <= U and 3*new + 64 >= U stays in place; a smaller new moves to the class
 *          of new; new > U moves to a block of exactly new (fm5's rules: FastMM5 keeps a block down to
 *          4*new + 64 >= U and asks for 2U + 32 when it grows; src/blocks/realloc_rules.h says why fm5
 *          does not).
 *   medium (usable U): U/2 <= new <= U stays in place unchanged; 720 <= new < U/2 moves into the
 *          best-fitting free block of the block's arena when that one is smaller than the block (cut to
 *          the block GetMem(new) would give; fm5's rule), and otherwise shrinks in place to max(new, 2872)
 *          rounded up to the 64-byte granularity; new < 720 (and < U/2) moves to a small
 *          block; new > U grows in place when the next block is free and big enough, to
 *          max(new, 1.25U) rounded up to 64 and capped by the space there, and otherwise moves to a
 *          block of max(new, 1.25U).
 *   large  (usable U): U/2 <= new <= U stays in place; smaller moves; new > U grows in place when the
 *          address range after the block is free, and otherwise moves to a block of max(new, 1.25U).
 *
 * In-place claims about growth are made only where a walk (medium) or the OS (large) shows the
 * neighbour's state; every move must preserve the first min(old, new) bytes. A chain of reallocations
 * crosses the kinds small -> medium -> large -> medium -> small, and a request that cannot be met
 * returns NULL and leaves the block as it was.
 */
#include "test_util.h"

#define SEED 0xEA110Cull

static uint64_t next_key(void)
{
    static uint64_t n;
    return tu_pattern_key(SEED, ++n, 0);
}

static unsigned kind_of(const void *p)
{
    tu_walk w;
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    const FastMM_WalkBlockInfo *info = tu_walk_find(&w, p);
    unsigned kind = info ? info->Kind : 0;
    tu_walk_free(&w);
    return kind;
}

/* A live block with its fill key and how many leading bytes hold the pattern. */
typedef struct block {
    void *p;
    size_t usable;
    size_t valid;
    uint64_t key;
} block;

static int make(block *b, size_t n)
{
    b->p = FastMM_GetMem(n);
    if (!CHECK_MSG(b->p != NULL, "FastMM_GetMem(%zu) failed", n))
        return 0;
    b->usable = FastMM_BlockMaximumUserBytes(b->p);
    b->key = next_key();
    b->valid = b->usable;
    tu_pattern_fill(b->p, b->usable, b->key);
    return 1;
}

/* Reallocates and checks the content: all of the smaller usable size when the block stayed, the
 * first min(valid, new) bytes when it moved. Afterwards the whole new block holds the pattern.
 * Returns the new pointer (NULL on failure, the block unchanged). */
static void *resize(block *b, size_t n, const char *what)
{
    void *old = b->p;
    size_t old_usable = b->usable;
    void *q = FastMM_ReallocMem(old, n);
    if (!CHECK_MSG(q != NULL, "%s: FastMM_ReallocMem(%p, %zu) failed", what, old, n))
        return NULL;
    b->p = q;
    b->usable = FastMM_BlockMaximumUserBytes(q);
    CHECK_MSG(b->usable >= n, "%s: %zu bytes requested, block holds %zu", what, n, b->usable);
    size_t keep;
    if (q == old)
        keep = old_usable < b->usable ? old_usable : b->usable;
    else
        keep = b->valid < n ? b->valid : n;
    if (keep > b->valid)
        keep = b->valid;
    size_t bad = tu_pattern_find_mismatch(q, 0, keep, b->key);
    CHECK_MSG(bad == SIZE_MAX, "%s: realloc %p -> %p (%zu -> %zu bytes) lost byte %zu of %zu", what, old, q,
              old_usable, n, bad, keep);
    tu_pattern_fill_range(q, keep, b->usable, b->key);
    b->valid = b->usable;
    return q;
}

static void release(block *b)
{
    if (b->p) {
        CHECK_PATTERN(b->p, b->valid, b->key);
        CHECK_MSG(FastMM_FreeMem(b->p) == 0, "FastMM_FreeMem(%p) failed", b->p);
    }
    b->p = NULL;
}

/* ---------------------------------------------------------------------------------------------- */

static void small_rules(void)
{
    SECTION("small blocks: in place, shrink by moving, grow to exactly new");
    size_t in_place = 0, shrink_moves = 0, grow_moves = 0;
    for (size_t c = 0; c < TU_SMALL_CLASS_COUNT; c++) {
        size_t block_size = tu_small_classes[c];
        if (block_size % TU_DEFAULT_ALIGNMENT != 0)
            continue; /* not a class at the default alignment */
        size_t U = block_size - TU_SMALL_HEADER;
        block b;
        if (!make(&b, U))
            continue;
        CHECK_EQ_SIZE(b.usable, U);

        void *p = b.p;
        CHECK_EQ_PTR(resize(&b, U, "small same size"), p);
        CHECK_EQ_SIZE(b.usable, U);

        /* The smallest size that still stays: 3 * new + 64 >= U. */
        size_t t = U > 64 ? (U - 64 + 2) / 3 : 0;
        if (t >= 1) {
            CHECK_MSG(resize(&b, t, "small shrink at the threshold") == p, "class %zu: %zu -> %zu moved", block_size,
                      U, t);
            CHECK_EQ_SIZE(b.usable, U);
            in_place++;
        } else {
            /* Blocks of up to 64 usable bytes never shrink. */
            CHECK_MSG(resize(&b, 1, "small shrink to 1") == p, "class %zu: %zu -> 1 moved", block_size, U);
            CHECK_EQ_SIZE(b.usable, U);
            in_place++;
        }
        if (t >= 2) {
            void *q = resize(&b, t - 1, "small shrink below the threshold");
            if (q) {
                CHECK_MSG(q != p, "class %zu: %zu -> %zu stayed in place", block_size, U, t - 1);
                CHECK_MSG(b.usable == tu_expected_usable(t - 1, TU_DEFAULT_ALIGNMENT),
                          "class %zu: shrunk to %zu, usable %zu, expected %zu", block_size, t - 1, b.usable,
                          tu_expected_usable(t - 1, TU_DEFAULT_ALIGNMENT));
                shrink_moves++;
            }
        }
        release(&b);

        /* Growth by a single byte moves, to the class of U + 1 (the next class, nothing larger). */
        if (!make(&b, U))
            continue;
        p = b.p;
        size_t target = U + 1;
        void *q = resize(&b, U + 1, "small grow");
        if (q) {
            CHECK_MSG(q != p, "class %zu: grew in place", block_size);
            CHECK_MSG(b.usable == tu_expected_usable(target, TU_DEFAULT_ALIGNMENT),
                      "class %zu: grown to usable %zu, expected %zu (for %zu)", block_size, b.usable,
                      tu_expected_usable(target, TU_DEFAULT_ALIGNMENT), target);
            unsigned kind = kind_of(q);
            CHECK_MSG(kind == tu_expected_kind(target), "class %zu: grown block is %s, expected %s", block_size,
                      tu_kind_name(kind), tu_kind_name(tu_expected_kind(target)));
            grow_moves++;
        }
        release(&b);

        /* So does a jump: a block of what was asked for. */
        if (!make(&b, U))
            continue;
        size_t jump = target + 1000;
        if (resize(&b, jump, "small grow far"))
            CHECK_MSG(b.usable == tu_expected_usable(jump, TU_DEFAULT_ALIGNMENT), "class %zu: to %zu, usable %zu",
                      block_size, jump, b.usable);
        release(&b);
    }
    tu_info("%zu in-place shrinks, %zu moving shrinks, %zu moving grows", in_place, shrink_moves, grow_moves);
    CHECK(in_place > 0 && shrink_moves > 0 && grow_moves > 0);
}

/* ---------------------------------------------------------------------------------------------- */

static size_t medium_in_place_shrink_usable(size_t n)
{
    size_t u = n < 2872 ? 2872 : n;
    return (u + TU_MEDIUM_HEADER + 63) / 64 * 64 - TU_MEDIUM_HEADER;
}

/* Shrinks a medium block below half (720 <= s < U/2) and checks where it went: in place, cut to the
 * in-place size, or into a free medium block of its arena that is at least GetMem(s)'s block and
 * smaller than the block, cut to that block. Thread caches are off (medium_rules), so the walk's free
 * medium blocks are the binned ones and the unfed space: with none of them in that range, the block
 * must stay. Counts the outcomes in *stayed and *moved. */
static void *medium_shrink(block *b, size_t s, const char *what, size_t *stayed, size_t *moved)
{
    void *p = b->p;
    size_t wanted = tu_medium_block_size(s);
    tu_walk w;
    tu_walk_take(&w, FastMM_MediumBlock, 0);
    const FastMM_WalkBlockInfo *self = tu_walk_find(&w, p);
    size_t old_block = self ? self->BlockSize : 0;
    unsigned arena = self ? self->Arena : 0;
    int fits = 0;
    for (size_t i = 0; i < w.count; i++) {
        const FastMM_WalkBlockInfo *f = &w.items[i];
        fits |= f->IsFree && f->Arena == arena && f->BlockSize >= wanted && f->BlockSize < old_block;
    }
    tu_walk_free(&w);
    CHECK_MSG(self != NULL, "%s: the walk does not show medium block %p", what, p);
    void *q = resize(b, s, what);
    if (!q)
        return NULL;
    if (q == p) {
        CHECK_MSG(b->usable == medium_in_place_shrink_usable(s), "%s: %p -> %zu in place: usable %zu, expected %zu",
                  what, p, s, b->usable, medium_in_place_shrink_usable(s));
        ++*stayed;
        return q;
    }
    ++*moved;
    CHECK_MSG(fits, "%s: %p (block of %zu bytes) -> %zu moved although no smaller free block of arena %u fits",
              what, p, old_block, s, arena);
    CHECK_MSG(b->usable == wanted - TU_MEDIUM_HEADER, "%s: moved to %p with usable %zu, expected %zu", what, q,
              b->usable, wanted - TU_MEDIUM_HEADER);
    tu_walk_take(&w, FastMM_MediumBlock, 0);
    const FastMM_WalkBlockInfo *to = tu_walk_find(&w, q);
    const FastMM_WalkBlockInfo *from = tu_walk_find(&w, p);
    CHECK_MSG(to && !to->IsFree && to->Arena == arena && to->BlockSize == wanted,
              "%s: the new block %p is not a used medium block of %zu bytes in arena %u", what, q, wanted, arena);
    CHECK_MSG(!from || from->IsFree, "%s: the old block %p is still in use", what, p);
    tu_walk_free(&w);
    return q;
}

static void medium_same_and_shrink(size_t n, size_t *stayed, size_t *moved)
{
    block b;
    if (!make(&b, n))
        return;
    size_t U = b.usable;
    CHECK_EQ_SIZE(U, tu_expected_usable(n, TU_DEFAULT_ALIGNMENT));
    void *p = b.p;

    CHECK_EQ_PTR(resize(&b, U, "medium same size"), p);
    CHECK_EQ_SIZE(b.usable, U);
    CHECK_EQ_PTR(resize(&b, U / 2 + 1, "medium to U/2 + 1"), p);
    CHECK_EQ_SIZE(b.usable, U);
    CHECK_EQ_PTR(resize(&b, U / 2, "medium to U/2"), p);
    CHECK_EQ_SIZE(b.usable, U);

    size_t s = U / 2 - 1;
    if (s >= 720)
        medium_shrink(&b, s, "medium shrink below half", stayed, moved);
    release(&b);

    /* 720 is the smallest size that stays medium. */
    if (make(&b, n)) {
        medium_shrink(&b, 720, "medium shrink to 720", stayed, moved);
        CHECK_EQ_SIZE(b.usable, 2872);
        release(&b);
    }
    /* Below 720 the block moves to the small manager. */
    if (make(&b, n)) {
        p = b.p;
        void *q = resize(&b, 719, "medium shrink to 719");
        if (q) {
            CHECK_MSG(q != p, "medium %zu -> 719 stayed in place", U);
            CHECK_EQ_SIZE(b.usable, tu_expected_usable(719, TU_DEFAULT_ALIGNMENT));
            CHECK_EQ_INT(kind_of(q), FastMM_SmallBlock);
        }
        release(&b);
    }
    if (make(&b, n)) {
        void *q = resize(&b, 1, "medium shrink to 1");
        if (q)
            CHECK_EQ_INT(kind_of(q), FastMM_SmallBlock);
        release(&b);
    }
}

/* A free block that fits exactly, between two used ones: a block shrunk below half moves into it (the
 * newest block of the bin that fits best), and its old place is freed. */
static void medium_shrink_into_hole(size_t n, size_t *moved)
{
    size_t U = tu_expected_usable(n, TU_DEFAULT_ALIGNMENT);
    size_t s = U / 2 - 1;
    if (s < TU_MIN_MEDIUM_USER)
        return;
    block b;
    if (!make(&b, n))
        return;
    tu_medium_chain c;
    if (CHECK_MSG(tu_medium_chain_make(&c, s), "no three adjacent medium blocks of %zu bytes", s)) {
        CHECK_EQ_INT(FastMM_FreeMem(c.middle), 0);
        tu_medium_chain_forget(&c, c.middle);
        tu_walk w;
        tu_walk_take(&w, FastMM_MediumBlock, 0);
        const FastMM_WalkBlockInfo *hole = tu_walk_find(&w, c.middle);
        const FastMM_WalkBlockInfo *self = tu_walk_find(&w, b.p);
        int same_arena = hole && self && hole->Arena == self->Arena;
        CHECK_MSG(hole && hole->IsFree && hole->BlockSize == tu_medium_block_size(s),
                  "after freeing %p the walk does not show a free block of %zu bytes there", c.middle,
                  tu_medium_block_size(s));
        tu_walk_free(&w);
        size_t stayed = 0, moved_here = 0;
        void *p = b.p;
        void *q = medium_shrink(&b, s, "medium shrink into a hole", &stayed, &moved_here);
        if (same_arena) {
            CHECK_MSG(q == c.middle, "medium %p (%zu) -> %zu went to %p, not into the hole at %p", p, U, s, q,
                      c.middle);
            *moved += moved_here;
        } else {
            tu_info("the hole %p and the block %p are in different arenas: the move was not checked", c.middle, p);
        }
        tu_medium_chain_release(&c);
    }
    release(&b);
}

/* The entry the walk has right after a medium block (its neighbour), or a zeroed one. */
static FastMM_WalkBlockInfo next_medium(const void *p)
{
    FastMM_WalkBlockInfo result;
    memset(&result, 0, sizeof result);
    tu_walk w;
    tu_walk_take(&w, FastMM_MediumBlock, 0);
    const FastMM_WalkBlockInfo *self = tu_walk_find(&w, p);
    if (self) {
        const FastMM_WalkBlockInfo *next = tu_walk_find(&w, (const uint8_t *)p + self->BlockSize);
        if (next)
            result = *next;
    }
    tu_walk_free(&w);
    return result;
}

static size_t medium_in_place_grow_usable(size_t U, size_t n, size_t combined)
{
    size_t want = n > U + U / 4 ? n : U + U / 4;
    size_t usable = (want + TU_MEDIUM_HEADER + 63) / 64 * 64 - TU_MEDIUM_HEADER;
    return usable > combined ? combined : usable;
}

static void medium_grow(size_t n)
{
    size_t U = tu_expected_usable(n, TU_DEFAULT_ALIGNMENT);
    tu_medium_chain c;
    block b;

    /* Next block in use: the block moves to max(new, 1.25U). */
    if (CHECK_MSG(tu_medium_chain_make(&c, n), "no three adjacent medium blocks of %zu bytes", n)) {
        b.p = c.first;
        b.usable = FastMM_BlockMaximumUserBytes(b.p);
        b.key = next_key();
        b.valid = b.usable;
        tu_pattern_fill(b.p, b.usable, b.key);
        FastMM_WalkBlockInfo next = next_medium(c.first);
        CHECK_MSG(next.Address == c.middle && !next.IsFree, "the walk does not show %p in use after %p", c.middle,
                  c.first);
        tu_medium_chain_forget(&c, c.first);
        void *q = resize(&b, U + 1, "medium grow, neighbour used");
        if (q) {
            size_t target = U + 1 > U + U / 4 ? U + 1 : U + U / 4;
            CHECK_MSG(q != c.first, "medium %zu grew in place over a used neighbour", U);
            CHECK_MSG(b.usable == tu_expected_usable(target, TU_DEFAULT_ALIGNMENT),
                      "medium %zu grown by moving: usable %zu, expected %zu", U, b.usable,
                      tu_expected_usable(target, TU_DEFAULT_ALIGNMENT));
            if (target > TU_MAX_MEDIUM_USER)
                CHECK_EQ_SIZE(FastMM_BlockCurrentUserBytes(q), U + 1);
        }
        release(&b);
        tu_medium_chain_release(&c);
    }

    /* The rest grows into the freed middle block, which stays medium only while 1.25U does. */
    if (U + U / 4 > TU_MAX_MEDIUM_USER - 64)
        return;
    static const int kinds_of_growth[] = {0, 1, 2}; /* by one byte, to fill the gap, past it */
    for (size_t k = 0; k < sizeof kinds_of_growth / sizeof kinds_of_growth[0]; k++) {
        if (!CHECK_MSG(tu_medium_chain_make(&c, n), "no three adjacent medium blocks of %zu bytes", n))
            return;
        b.p = c.first;
        b.usable = FastMM_BlockMaximumUserBytes(b.p);
        b.key = next_key();
        b.valid = b.usable;
        tu_pattern_fill(b.p, b.usable, b.key);
        CHECK_EQ_INT(FastMM_FreeMem(c.middle), 0);
        tu_medium_chain_forget(&c, c.middle);
        FastMM_WalkBlockInfo next = next_medium(c.first);
        /* The freed block lies between two used ones, so it is free and exactly its old size. */
        CHECK_MSG(next.Address == c.middle && next.IsFree && next.BlockSize == c.middle_block_size,
                  "after freeing %p: the walk shows %p free=%d size %zu after %p", c.middle, next.Address, next.IsFree,
                  next.BlockSize, c.first);
        size_t combined = U + c.middle_block_size;
        size_t request = k == 0 ? U + 1 : k == 1 ? combined : combined + 1;
        if (request > TU_MAX_MEDIUM_USER) {
            tu_medium_chain_release(&c);
            continue;
        }
        tu_medium_chain_forget(&c, c.first);
        void *q = resize(&b, request, k == 0 ? "medium grow in place" : k == 1 ? "medium grow into the whole gap"
                                                                               : "medium grow past the gap");
        if (q) {
            if (k < 2) {
                CHECK_MSG(q == c.first, "medium %zu -> %zu moved although %zu free bytes follow", U, request,
                          c.middle_block_size);
                CHECK_MSG(b.usable == medium_in_place_grow_usable(U, request, combined),
                          "medium %zu -> %zu in place: usable %zu, expected %zu", U, request, b.usable,
                          medium_in_place_grow_usable(U, request, combined));
                if (b.usable < combined) {
                    FastMM_WalkBlockInfo rest = next_medium(q);
                    CHECK_MSG(rest.IsFree && rest.Address == (uint8_t *)q + b.usable + TU_MEDIUM_HEADER,
                              "the rest of the gap after %p is not a free block", q);
                }
            } else {
                CHECK_MSG(q != c.first, "medium %zu -> %zu stayed in place past the %zu free bytes", U, request,
                          c.middle_block_size);
                size_t target = request > U + U / 4 ? request : U + U / 4;
                CHECK_EQ_SIZE(b.usable, tu_expected_usable(target, TU_DEFAULT_ALIGNMENT));
            }
        }
        release(&b);
        tu_medium_chain_release(&c);
    }
}

static void medium_rules(void)
{
    SECTION("medium blocks: stay, shrink in place or into a smaller free block, move to small, grow");
    static const size_t sizes[] = {2623, 2872, 3000, 5000, 10000, 33333, 70000, 100000, 150000, 250000,
                                   400000, 558904};
    /* Off, so that a freed medium block is binned (a cached one is not a place a shrink moves to). */
    int caches = FastMM_SetThreadCaches(0);
    size_t stayed = 0, moved = 0, moved_into_hole = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        medium_same_and_shrink(sizes[i], &stayed, &moved);
        medium_shrink_into_hole(sizes[i], &moved_into_hole);
        medium_grow(sizes[i]);
    }
    FastMM_SetThreadCaches(caches);
    tu_info("shrinks below half: %zu in place, %zu into free blocks, %zu into prepared holes", stayed, moved,
            moved_into_hole);
    CHECK(stayed > 0 && moved_into_hole > 0);
}

/* ---------------------------------------------------------------------------------------------- */

static int range_is_free(const void *address, size_t *free_bytes)
{
    /* At least one 64 KB granule: a smaller gap can hold no mapping of fm5's. */
    size_t bytes = tu_os_free_bytes_at(address, (size_t)64 << 20) & ~(size_t)0xFFFF;
    if (free_bytes)
        *free_bytes = bytes;
    return bytes != 0;
}

static uint8_t *large_end(const block *b)
{
    return (uint8_t *)b->p + b->usable;
}

static uint8_t *large_base(const block *b)
{
    return (uint8_t *)b->p - TU_LARGE_HEADER;
}

static void large_shrink(void)
{
    block b;
    if (!make(&b, 1000000))
        return;
    size_t U = b.usable;
    CHECK_EQ_SIZE(U, tu_large_usable(1000000));
    void *p = b.p;
    CHECK_EQ_PTR(resize(&b, U, "large same size"), p);
    CHECK_EQ_SIZE(FastMM_BlockCurrentUserBytes(p), U);
    CHECK_EQ_PTR(resize(&b, U / 2, "large to U/2"), p);
    CHECK_EQ_SIZE(b.usable, U);
    CHECK_EQ_SIZE(FastMM_BlockCurrentUserBytes(p), U / 2);
    b.valid = U / 2; /* only the requested size is promised from here */
    void *q = resize(&b, U / 2 - 1, "large below U/2");
    if (q) {
        CHECK(q != p);
        CHECK_EQ_SIZE(b.usable, tu_expected_usable(U / 2 - 1, TU_DEFAULT_ALIGNMENT));
        CHECK_EQ_INT(kind_of(q), tu_expected_kind(U / 2 - 1));
    }
    release(&b);

    if (make(&b, 2000000)) {
        q = resize(&b, 100, "large to small");
        if (q)
            CHECK_EQ_INT(kind_of(q), FastMM_SmallBlock);
        release(&b);
    }
}

static void large_grow(void)
{
    /* Two blocks are likely adjacent (fm5 takes address space from one end); freeing the one above the
     * other leaves the range after the lower one free. Only what the OS shows is relied on. */
    block a, b;
    if (!make(&a, 1000000) || !make(&b, 1000000))
        return;
    block *grower = NULL;
    if (large_end(&b) == large_base(&a)) {
        release(&a);
        grower = &b;
    } else if (large_end(&a) == large_base(&b)) {
        release(&b);
        grower = &a;
    } else if (range_is_free(large_end(&a), NULL)) {
        grower = &a;
    } else if (range_is_free(large_end(&b), NULL)) {
        grower = &b;
    }
    if (grower) {
        size_t U = grower->usable, room = 0;
        if (range_is_free(large_end(grower), &room) && room >= 65536) {
            void *p = grower->p;
            void *q = resize(grower, U + 1, "large grow in place");
            if (q) {
                CHECK_MSG(q == p, "large block %p moved although %zu bytes after it are free", p, room);
                CHECK_EQ_SIZE(FastMM_BlockCurrentUserBytes(q), U + 1);
                CHECK_MSG((grower->usable + TU_LARGE_HEADER) % 65536 == 0, "grown usable %zu", grower->usable);
            }
            tu_info("large in-place growth exercised (%zu free bytes after the block)", room);
        } else {
            grower = NULL;
        }
    }
    if (!grower)
        tu_info("no large block with free address space after it: in-place growth not exercised");
    if (a.p)
        release(&a);
    if (b.p)
        release(&b);

    /* With the range after the block reserved by someone else, growth must move. The block must be a
     * fresh mapping: a region from the large-block cache may carry slack, which growth uses in place. */
    FastMM_ProcessAllPendingFrees();
    block g;
    if (!make(&g, 1000000))
        return;
    void *guard = NULL;
    if (range_is_free(large_end(&g), NULL))
        guard = tu_os_reserve_inaccessible(large_end(&g), 65536);
    if (CHECK_MSG(!range_is_free(large_end(&g), NULL), "could not occupy the range after %p", g.p)) {
        size_t U = g.usable;
        void *p = g.p;
        void *q = resize(&g, U + 1, "large grow, next range in use");
        if (q) {
            CHECK_MSG(q != p, "large block grew in place over a reserved range");
            CHECK_EQ_SIZE(g.usable, tu_large_usable(U + U / 4));
            CHECK_EQ_SIZE(FastMM_BlockCurrentUserBytes(q), U + 1);
        }
    }
    release(&g);
    if (guard)
        tu_os_unmap(guard, 65536);

    /* Growth far past 1.25U gets what was asked for. */
    if (make(&g, 700000)) {
        if (resize(&g, 5000000, "large grow far")) {
            CHECK_MSG(g.usable >= 5000000, "usable %zu", g.usable);
            CHECK_EQ_SIZE(FastMM_BlockCurrentUserBytes(g.p), 5000000);
        }
        release(&g);
    }
}

/* ---------------------------------------------------------------------------------------------- */

static void cross_kinds(void)
{
    SECTION("cross-kind chain: small -> medium -> large -> medium -> small");
    static const struct {
        size_t size;
        unsigned kind;
    } steps[] = {
        {10000, FastMM_MediumBlock}, {1000000, FastMM_LargeBlock}, {50000, FastMM_MediumBlock},
        {200, FastMM_SmallBlock},    {3000000, FastMM_LargeBlock}, {100, FastMM_SmallBlock},
    };
    block b;
    if (!make(&b, 100))
        return;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        void *old = b.p;
        size_t old_usable = b.usable;
        /* Growth of a medium block may stay in place when a big enough free block follows it. */
        FastMM_WalkBlockInfo next = next_medium(old);
        int may_stay = kind_of(old) == FastMM_MediumBlock && steps[i].size > old_usable && next.IsFree &&
                       steps[i].size <= old_usable + next.BlockSize;
        void *q = resize(&b, steps[i].size, "cross-kind");
        if (!q)
            break;
        if (q == old) {
            CHECK_MSG(may_stay, "step %zu: %zu -> %zu bytes stayed in place", i, old_usable, steps[i].size);
        } else {
            unsigned kind = kind_of(q);
            CHECK_MSG(kind == steps[i].kind, "step %zu: block of %zu bytes is %s, expected %s", i, steps[i].size,
                      tu_kind_name(kind), tu_kind_name(steps[i].kind));
        }
    }
    release(&b);
}

static void failures(void)
{
    SECTION("a request that cannot be met leaves the block as it was");
    static const size_t sizes[] = {100, 20000, 1000000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        block b;
        if (!make(&b, sizes[i]))
            continue;
        static const size_t huge[] = {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX - 65536};
        for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
            void *q = FastMM_ReallocMem(b.p, huge[h]);
            CHECK_MSG(q == NULL, "FastMM_ReallocMem(%zu-byte block, %zu) returned %p", sizes[i], huge[h], q);
            CHECK_PATTERN(b.p, b.usable, b.key);
            CHECK_EQ_SIZE(FastMM_BlockMaximumUserBytes(b.p), b.usable);
        }
        /* Still an ordinary block: it can grow and be freed. */
        resize(&b, b.usable + 1, "after failed realloc");
        release(&b);
    }
}

int main(void)
{
    tu_init("test_realloc_rules");
    tu_events_install(TU_KEEP_LAST_EVENT);
    size_t baseline_bytes = tu_allocated_bytes();
    size_t baseline_blocks = tu_used_block_count();

    small_rules();
    medium_rules();
    SECTION("large blocks: stay above U/2, move below, grow in place only into free address space");
    large_shrink();
    large_grow();
    cross_kinds();
    long events_before_failures = tu_events_total();
    failures();

    SECTION("nothing left allocated");
    CHECK_EQ_INT(events_before_failures, 0);
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    return test_finish();
}
