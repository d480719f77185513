/*
 * test_integrity — a long seeded chain of allocations, reallocations and frees over all three block
 * managers, every live block filled with a pattern derived from its slot and generation.
 *
 * Usage: test_integrity [operations [seed]]   (default 1,000,000 operations)
 *
 * What is checked:
 *   - every request is met with a block of at least the requested size, aligned as documented;
 *   - AllocMem and calloc blocks start zeroed;
 *   - a block keeps its pattern until it is freed: the block an operation touches is verified whole
 *     before the operation, a reallocation preserves min(old, new) bytes (all of the smaller usable
 *     size when it stays in place), and every 1000 operations every byte of every live block is
 *     verified, which catches a block that another operation overwrote (overlapping blocks, a free
 *     list link written into a live block, a copy of the wrong length);
 *   - every 100,000 operations the walk lists each live block as used with its usable size, and the
 *     allocated byte count covers the live blocks;
 *   - after freeing everything, the allocated byte count and the used-block count are back at their
 *     starting values.
 * Verifying every live block after every single operation would cost (live bytes) x (operations),
 * about 10^13 byte compares here, so the full sweep runs every 1000 operations instead.
 */
#include "test_util.h"

#define SLOTS 2048
#define LIVE_CAP (12u << 20) /* bytes; keeps the periodic full sweep cheap */
#define SWEEP_EVERY 1000
#define WALK_EVERY 100000
#define MAX_FAILURES_BEFORE_STOP 100

typedef struct slot {
    uint8_t *p;
    size_t size;   /* requested */
    size_t usable; /* FastMM_BlockMaximumUserBytes when it was last sized */
    uint64_t key;
    uint64_t generation;
} slot;

static slot slots[SLOTS];
static size_t live_usable;
static uint64_t seed = 0xF35EEDull;
static unsigned long long step;

/* 80% small, 18% medium (mostly the smaller ones, as in programs), 2% large. */
static size_t random_size(tu_rng *r)
{
    uint64_t pick = tu_rng_below(r, 1000);
    if (pick < 800)
        return tu_rng_range(r, 0, TU_MAX_SMALL_USER);
    if (pick < 980) {
        uint64_t tier = tu_rng_below(r, 100);
        if (tier < 80)
            return tu_rng_log_range(r, TU_MIN_MEDIUM_USER, 16384);
        if (tier < 97)
            return tu_rng_log_range(r, 16384, 131072);
        return tu_rng_log_range(r, 131072, TU_MAX_MEDIUM_USER);
    }
    return tu_rng_range(r, TU_MIN_LARGE_USER, 800000);
}

/* A new size for a reallocation: half the time near the current size, where the in-place rules
 * apply, otherwise anywhere. */
static size_t random_resize(tu_rng *r, size_t current)
{
    if (tu_rng_below(r, 2) == 0) {
        size_t delta = current / 4 + 16;
        size_t lo = current > delta ? current - delta : 1;
        return tu_rng_range(r, lo, current + delta);
    }
    return random_size(r);
}

static int verify(size_t index, size_t from, size_t to, const char *when)
{
    slot *s = &slots[index];
    size_t bad = tu_pattern_find_mismatch(s->p, from, to, s->key);
    return CHECK_MSG(bad == SIZE_MAX,
                     "step %llu, %s: slot %zu block %p (size %zu, usable %zu): byte %zu is 0x%02x, expected 0x%02x",
                     step, when, index, (void *)s->p, s->size, s->usable, bad,
                     bad == SIZE_MAX ? 0 : s->p[bad], bad == SIZE_MAX ? 0 : tu_pattern_byte(s->key, bad));
}

static void check_fresh_block(size_t index, size_t n)
{
    slot *s = &slots[index];
    s->usable = FastMM_BlockMaximumUserBytes(s->p);
    CHECK_MSG(s->usable >= n, "step %llu: %zu bytes requested, block %p holds %zu", step, n, (void *)s->p,
              s->usable);
    size_t alignment = n > TU_MAX_SMALL_USER ? 64 : TU_DEFAULT_ALIGNMENT;
    CHECK_MSG(tu_is_aligned(s->p, alignment), "step %llu: %zu bytes at %p not %zu-aligned", step, n,
              (void *)s->p, alignment);
}

static void do_alloc(tu_rng *r, size_t index)
{
    slot *s = &slots[index];
    size_t n = random_size(r);
    if (live_usable + n > LIVE_CAP)
        n = tu_rng_range(r, 0, 256);
    int zeroed = 0;
    switch (tu_rng_below(r, 4)) {
    case 0:
        s->p = (uint8_t *)FastMM_GetMem(n);
        break;
    case 1:
        s->p = (uint8_t *)FastMM_AllocMem(n);
        zeroed = 1;
        break;
    case 2:
        s->p = (uint8_t *)fm5_malloc(n);
        break;
    default:
        s->p = (uint8_t *)((n % 4 == 0 && n > 0) ? fm5_calloc(n / 4, 4) : fm5_calloc(n, 1));
        zeroed = 1;
        break;
    }
    if (!CHECK_MSG(s->p != NULL, "step %llu: allocation of %zu bytes failed", step, n))
        return;
    s->size = n;
    check_fresh_block(index, n);
    if (zeroed) {
        size_t bad = 0;
        int zero = tu_all_bytes_equal(s->p, n, 0, &bad); /* before the message reads `bad` */
        CHECK_MSG(zero, "step %llu: zeroed block %p of %zu bytes has byte %zu = 0x%02x", step, (void *)s->p, n, bad,
                  s->p[bad]);
    }
    s->generation++;
    s->key = tu_pattern_key(seed, index, s->generation);
    tu_pattern_fill(s->p, s->usable, s->key);
    live_usable += s->usable;
}

static void do_free(tu_rng *r, size_t index)
{
    slot *s = &slots[index];
    verify(index, 0, s->usable, "before free");
    if (tu_rng_below(r, 2) == 0)
        CHECK_MSG(FastMM_FreeMem(s->p) == 0, "step %llu: FastMM_FreeMem(%p) failed", step, (void *)s->p);
    else
        fm5_free(s->p);
    live_usable -= s->usable;
    s->p = NULL;
    s->size = s->usable = 0;
}

static void do_realloc(tu_rng *r, size_t index)
{
    slot *s = &slots[index];
    verify(index, 0, s->usable, "before realloc");
    size_t n = random_resize(r, s->size);
    if (live_usable - s->usable + n > LIVE_CAP)
        n = tu_rng_range(r, 1, 256);
    int c_api = tu_rng_below(r, 2) == 0;
    if (n == 0 && !c_api)
        n = 1; /* FastMM_ReallocMem rejects size 0; fm5_realloc frees */
    uint8_t *old = s->p;
    size_t old_size = s->size, old_usable = s->usable;
    uint8_t *q = (uint8_t *)(c_api ? fm5_realloc(old, n) : FastMM_ReallocMem(old, n));
    if (c_api && n == 0) {
        CHECK_MSG(q == NULL, "step %llu: fm5_realloc(%p, 0) returned %p", step, (void *)old, (void *)q);
        live_usable -= old_usable;
        s->p = NULL;
        s->size = s->usable = 0;
        return;
    }
    if (!CHECK_MSG(q != NULL, "step %llu: realloc of %p from %zu to %zu bytes failed", step, (void *)old, old_size,
                   n))
        return; /* the old block is still ours and intact: keep it */
    s->p = q;
    s->size = n;
    check_fresh_block(index, n);
    size_t keep;
    if (q == old)
        keep = old_usable < s->usable ? old_usable : s->usable;
    else
        keep = old_size < n ? old_size : n;
    verify(index, 0, keep, q == old ? "after in-place realloc" : "after moving realloc");
    tu_pattern_fill_range(s->p, keep, s->usable, s->key);
    live_usable = live_usable - old_usable + s->usable;
}

static void sweep(const char *when)
{
    for (size_t i = 0; i < SLOTS; i++)
        if (slots[i].p)
            verify(i, 0, slots[i].usable, when);
}

static void walk_check(size_t baseline_bytes)
{
    tu_walk w;
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    CHECK(w.result == 1);
    size_t sum = 0;
    for (size_t i = 0; i < SLOTS; i++) {
        if (!slots[i].p)
            continue;
        sum += slots[i].usable;
        const FastMM_WalkBlockInfo *info = tu_walk_find(&w, slots[i].p);
        if (CHECK_MSG(info != NULL, "step %llu: live block %p missing from the walk", step, (void *)slots[i].p)) {
            CHECK_MSG(info->IsFree == 0 && info->UsableSize == slots[i].usable,
                      "step %llu: block %p walks as free=%d usable=%zu, expected usable %zu", step, (void *)slots[i].p,
                      info->IsFree, info->UsableSize, slots[i].usable);
        }
    }
    tu_walk_free(&w);
    size_t allocated = tu_allocated_bytes();
    CHECK_MSG(allocated >= baseline_bytes + sum, "step %llu: AllocatedBytes %zu < baseline %zu + live usable %zu",
              step, allocated, baseline_bytes, sum);
}

int main(int argc, char **argv)
{
    tu_init("test_integrity");
    unsigned long long operations = tu_arg_count(argc, argv, 1, 1000000);
    seed = tu_arg_count(argc, argv, 2, seed);
    tu_info("%llu operations, seed 0x%llx, at most %u live bytes", operations, (unsigned long long)seed,
            LIVE_CAP);
    tu_events_install(TU_KEEP_LAST_EVENT);
    size_t baseline_bytes = tu_allocated_bytes();
    size_t baseline_blocks = tu_used_block_count();

    SECTION("random chain");
    tu_rng r;
    tu_rng_seed(&r, seed);
    unsigned long long counts[3] = {0, 0, 0};
    unsigned long long started = tu_ms();
    for (step = 1; step <= operations; step++) {
        size_t index = (size_t)tu_rng_below(&r, SLOTS);
        if (!slots[index].p) {
            do_alloc(&r, index);
            counts[0]++;
        } else if (tu_rng_below(&r, 100) < 45) {
            do_free(&r, index);
            counts[2]++;
        } else {
            do_realloc(&r, index);
            counts[1]++;
        }
        if (step % SWEEP_EVERY == 0)
            sweep("periodic sweep");
        if (step % WALK_EVERY == 0)
            walk_check(baseline_bytes);
        if (tu_failed > MAX_FAILURES_BEFORE_STOP) {
            printf("   stopping at step %llu after %ld failures\n", step, (long)tu_failed);
            break;
        }
    }
    tu_info("%llu allocations, %llu reallocations, %llu frees in %llu ms", counts[0], counts[1], counts[2],
            tu_ms() - started);
    CHECK(counts[0] > 0 && counts[1] > 0 && counts[2] > 0);

    SECTION("final sweep and release");
    sweep("final sweep");
    walk_check(baseline_bytes);
    for (size_t i = 0; i < SLOTS; i++) {
        if (slots[i].p) {
            CHECK_MSG(FastMM_FreeMem(slots[i].p) == 0, "final FastMM_FreeMem(%p) failed", (void *)slots[i].p);
            slots[i].p = NULL;
        }
    }
    CHECK_EQ_INT(FastMM_ProcessAllPendingFrees(), 1);
    CHECK_EQ_SIZE(tu_allocated_bytes(), baseline_bytes);
    CHECK_EQ_SIZE(tu_used_block_count(), baseline_blocks);
    CHECK_EQ_INT(tu_events_total(), 0);
    return test_finish();
}
