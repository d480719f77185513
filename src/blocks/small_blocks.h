/* Small blocks: up to 2,622 user bytes in FastMM5's size classes, cut from spans that are themselves
 * medium blocks. Each arena has one manager per class. */
#ifndef FM5_SMALL_BLOCKS_H
#define FM5_SMALL_BLOCKS_H

#include "base/platform.h"
#include "base/ring.h"
#include "blocks/geometry.h"
#include "blocks/block_status.h"
#include "blocks/arena.h"

struct fm5_small_manager;

/* The first 64 bytes of a span; its last two bytes are the first block's status word.
 * Invariants (checked by fm5_small_check_span in a checked build):
 * - the span is a medium block with is_small_block_span set, and identity_tag == fm5_small_span_tag;
 * - blocks_in_use <= total_blocks, and blocks not yet fed count as in use;
 * - first_free_block chains exactly total_blocks - blocks_in_use - (unfed blocks) blocks of this span,
 *   each marked FM5_STATUS_FREE; the span is on its manager's partially-free ring iff the chain is not
 *   empty. */
typedef struct fm5_small_span {
    fm5_ring partially_free;             /* first: asm/ compares a span with its manager's address */
    void *first_free_block;
    struct fm5_small_manager *manager;
    uint32_t total_blocks;
    uint32_t blocks_in_use;     /* blocks not yet fed count as in use */
    /* The span's address mixed with a constant while the span holds small blocks, 0 otherwise: FreeMem
     * checks it, in the cache line it reads anyway, before trusting the span. */
    uintptr_t identity_tag;
    /* The manager's block size, class slot and reciprocal, copied when the span is made and never
     * changed: FreeMem and the thread caches' push read them here, in the line they read anyway, and
     * not in the manager's line, which every lock and unlock of another thread writes. */
    uint16_t block_size;
    uint16_t class_slot;
    uint32_t block_size_reciprocal;
    uint32_t blocks_bytes;      /* total_blocks * block_size, fixed: the span's blocks end there */
    uint8_t reserved[64 - 5 * FM5_POINTER_SIZE - 20];
} fm5_small_span;

#define FM5_SMALL_SPAN_TAG_KEY ((uintptr_t)0x5EA5C0DE5EA5C0DEull)

FM5_INLINE uintptr_t fm5_small_span_tag(const fm5_small_span *span)
{
    return (uintptr_t)span ^ FM5_SMALL_SPAN_TAG_KEY;
}

_Static_assert(sizeof(fm5_small_span) == FM5_SMALL_SPAN_HEADER_SIZE, "span header must end at the first block");

/* One size class of one arena. Its gate's lock guards the partially-free ring, every span's free chain
 * and counts, and the start of a new feed span; the feed itself is lock-free (docs/design.md):
 * - feed: low 32 bits the span offset of the last block handed out, high 32 bits a counter that makes
 *   every change distinct to compare-and-swap. The offset only decreases, by block_size, except when
 *   a new feed span starts, under the lock, after the old one ran out (offset <= the span header).
 * - feed_span is published before the offset that makes it usable. */
typedef struct FM5_ALIGNED(FM5_CACHE_LINE) fm5_small_manager {
    fm5_ring partially_free;                 /* sentinel of the spans with free blocks; first, as in a span */
    volatile uint64_t feed;
    fm5_small_span *volatile feed_span;
    fm5_arena_gate gate;
    uint16_t block_size;
    uint8_t arena;
    /* In arena 0's manager of a class only: the class uses arena affinity (blocks/arena_affinity.h). */
    volatile uint8_t affinity_active;
    uint32_t block_size_reciprocal;          /* ceil(2^32 / block_size), to test block boundaries */
    uint32_t minimum_span_size;
    uint32_t optimal_span_size;
} fm5_small_manager;
_Static_assert(sizeof(fm5_small_manager) == FM5_CACHE_LINE, "a manager is one cache line");

extern fm5_small_manager fm5_small_managers[FM5_MAXIMUM_ARENA_COUNT][FM5_SMALL_CLASS_COUNT];
extern size_t fm5_small_contention_count;
/* Arenas in use, the first of fm5_small_managers' rows: fixed while fm5 holds memory (fm5.h,
 * FastMM_SetArenaCounts), so every span's manager is below it. asm/ reads it as a dword. */
extern uint32_t fm5_small_arena_count;

FM5_INLINE fm5_small_span *fm5_small_span_of(const void *user, unsigned status)
{
    uintptr_t line_mask = ((uintptr_t)1 << FM5_SMALL_LINE_SHIFT) - 1;
    unsigned flag_mask = (1u << FM5_SMALL_OFFSET_SHIFT) - 1;
    return (fm5_small_span *)(((uintptr_t)user & ~line_mask) -
                              ((uintptr_t)(status & ~flag_mask) << (FM5_SMALL_LINE_SHIFT - FM5_SMALL_OFFSET_SHIFT)));
}

FM5_INLINE int fm5_is_small_manager(const void *manager)
{
    uintptr_t offset = (uintptr_t)manager - (uintptr_t)fm5_small_managers;
    return offset < sizeof fm5_small_managers && offset % sizeof(fm5_small_manager) == 0;
}

/* Is `user` exactly on a block boundary of `span`, among its blocks? One multiplication: with
 * r = ceil(2^32 / b) = (2^32 + e) / b, 0 <= e < b, and an offset x = q * b + s (0 <= s < b) below the
 * span's reach R, x * r mod 2^32 = q * e + s * r. For s = 0 that is below q * b <= R, hence below r;
 * for s > 0 it is at least r and below (b - 1) * r + R < 2^32 - 2^32 / b + b + R, which stays below
 * 2^32 (no wrap) while R + b < 2^32 / b. So x is a multiple of b exactly when x * r mod 2^32 < r
 * (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019). asm/ repeats it
 * (small_block_validation.inc); test_bad_input checks it for every class and offset. */
_Static_assert(FM5_SMALL_MAXIMUM_SPAN_REACH + FM5_MAXIMUM_SMALL_BLOCK_SIZE <
                   ((uint64_t)1 << 32) / FM5_MAXIMUM_SMALL_BLOCK_SIZE,
               "the one-multiplication boundary test is exact for every small block size and offset");
FM5_INLINE int fm5_small_is_block_start(const fm5_small_span *span, const void *user)
{
    uintptr_t offset = (uintptr_t)user - ((uintptr_t)span + FM5_SMALL_SPAN_HEADER_SIZE);
    return offset < span->blocks_bytes &&
           (uint32_t)((uint32_t)offset * span->block_size_reciprocal) < span->block_size_reciprocal;
}

void fm5_small_initialize(void);
/* Only while fm5 holds no memory and nothing allocates (api/tuning.c). */
void fm5_small_set_arena_count(unsigned count);
void *fm5_small_get_mem(size_t size);
/* The claim of a free: sets the free mark of the small block `user` by compare-and-swap from `status`,
 * its status word as read. Returns 0 when the block was free already or another free claimed it
 * first: of two frees of one block exactly one claims it. The loser must read nothing of the span,
 * which the winner may have emptied and released; a claimed block keeps its span until released. */
FM5_INLINE int fm5_small_claim(void *user, uint16_t status)
{
    fm5_claims_prepare();
    return !(status & FM5_STATUS_FREE) &&
           fm5_cas_u16(fm5_status_word(user), status, (uint16_t)(status | FM5_STATUS_FREE));
}

/* For a block that fm5_identify_block proved to be a live small block. Returns 0, or -1 if it turned
 * out to be free already (a concurrent double free). */
int fm5_small_free(void *user, fm5_small_span *span);
/* The release step of fm5_small_free, for a block the caller has claimed (marked free by its own
 * compare-and-swap): under the manager's lock, or queued on its pending-free list when it is busy. */
void fm5_small_release_claimed(void *user, fm5_small_span *span);
int fm5_small_process_pending_frees(int wait);
/* For the thread caches (blocks/thread_cache.h): up to `want` blocks of class slot `class_slot` in one
 * pass over the arenas (one lock or one feed compare-and-swap): returns the first, allocated, or NULL
 * when the OS refused memory, and chains the others on *rest, each marked free and counted in use;
 * *rest_count is how many (so that the caller need not walk the chain to count it). */
void *fm5_small_get_batch(unsigned class_slot, unsigned want, void **rest, unsigned *rest_count, int fresh_only);
/* Whether no block in use shares a 64-byte line with the small block `user`, which the caller owns
 * (allocated, cached or claimed by its free, so that its span stays; a hint, read without the lock): a thread that writes it then shares its lines with nobody. `fresh_only` above takes blocks
 * from the sequential feed and new spans only, whose lines nobody has used. */
int fm5_small_lines_are_quiet(const void *user);
/* Gives cached blocks (chained through their first word, each marked free and counted in use) back
 * to their spans, one lock per run of blocks of one manager; a busy manager gets them queued. The
 * second gives back the first `count` blocks of the chain only and returns the rest of it. */
void fm5_small_release_cached(void *chain);
void *fm5_small_release_cached_first(void *chain, unsigned count);

/* A quarantined block (blocks/recycling.h) goes back on its span's free chain if the freed-block check
 * now finds it intact: returns 1 then, 0 if it must stay quarantined. Takes the manager's lock. */
int fm5_small_requeue_quarantined(void *user);
/* After debug mode: every span of every manager that has no block in use (debug mode's "never free
 * small-block spans" kept it; quarantined blocks count as in use) is released as its last free would
 * release it now, once its freed debug blocks have passed the freed-block check (a corrupted one is
 * reported and quarantined, and keeps its span). Takes each manager's lock in turn, waiting at most
 * `timeout_ms`; the medium free of a span never waits (lock order small -> medium). Returns 0 if a
 * manager stayed busy or debug mode came back meanwhile. */
int fm5_small_release_empty_spans(uint32_t timeout_ms);

/* A checked build's audit of one span, under its manager's lock: the invariants above. */
void fm5_small_check_span(const fm5_small_span *span);
/* The end of a free under the manager's lock: releases the blocks queued on the manager meanwhile,
 * unlocks and returns 0 (FreeMem's result). fm5_small_free ends with it; the NASM FreeMem tail-jumps
 * here when the queue is not empty. */
int fm5_small_drain_pending_and_unlock(fm5_small_manager *manager);

#endif
