/* Medium blocks: 2,623 to 558,904 user bytes, 64-byte aligned, carved from spans mapped from the OS, kept in
 * 1024 size bins with a two-level bitmap and coalesced with both neighbours when freed. */
#ifndef FM5_MEDIUM_BLOCKS_H
#define FM5_MEDIUM_BLOCKS_H

#include "base/platform.h"
#include "base/ring.h"
#include "blocks/geometry.h"
#include "blocks/arena.h"


/* The 8 bytes before a medium block's user address. */
typedef struct fm5_medium_header {
    uint16_t size_multiple;          /* block size / 64, header included */
    uint16_t span_offset_multiple;   /* (user address - span) / 64 */
    uint8_t previous_block_is_free;
    uint8_t is_small_block_span;
    uint16_t status;                 /* block_status.h; shared with the status word */
} fm5_medium_header;

typedef struct fm5_medium_free_links {
    struct fm5_medium_free_links *next;
    struct fm5_medium_free_links *prev;  /* may point at the bin slot, whose `next` is the slot itself */
} fm5_medium_free_links;

struct fm5_medium_manager;

/* The start of every medium span. A bitmap of block starts (one bit per 64 bytes of span) follows the
 * header: FreeMem checks it so that an interior pointer is never taken for a block. */
typedef struct fm5_medium_span {
    fm5_ring ring;                       /* the arena's spans */
    struct fm5_medium_manager *manager;
    uint32_t span_size;
    uint32_t first_block_offset;
    uint32_t emptied_ms;                 /* fm5_os_tick_ms when it was last left empty and kept */
    uint8_t reserved[64 - 3 * FM5_POINTER_SIZE - 12];
} fm5_medium_span;

/* One medium arena. Its gate's lock guards everything here and every block of its spans, feeding
 * included. Invariants (fm5_medium_check_manager in a checked build):
 * - bit b of bin_bitmaps[b / 32] is set iff bins[b] is not empty, and bit g of group_bitmap iff
 *   bin_bitmaps[g] is not 0;
 * - every block in bins[b] is free, starts a block in its span's block-start bitmap, and is at least
 *   the size of bin b and smaller than the next bin's (the last bin: up to the largest medium block);
 * - walking a span from its first block by block sizes reaches its end exactly, every step a block
 *   start; no two free blocks without debug information are neighbours (they would have merged),
 *   except while debug mode keeps freed blocks apart and until its end merges them;
 * - kept_spans is the number of blocks in the last bin that are all of their span;
 * - a binned block carries debug information only while debug mode is on, or from then until
 *   fm5_medium_recycle_freed_debug_blocks has been through the arena;
 * - the feed span's unfed space is [feed_start, feed_end), feed_start its first block; the block at
 *   feed_end is not free; without a feed span both are NULL;
 * - fresh_floor <= feed_end - FM5_MEDIUM_HEADER_SIZE: below it, down to feed_start, nothing has been
 *   written since the OS mapped the feed span, so those bytes are zero. */
typedef struct FM5_ALIGNED(FM5_CACHE_LINE) fm5_medium_manager {
    fm5_ring spans;                      /* sentinel of the arena's spans */
    fm5_arena_gate gate;
    uint32_t arena;
    fm5_medium_span *feed_span;
    char *feed_start;                    /* the feed span's first block, NULL without a feed span */
    char *feed_end;                      /* lowest carved block of the feed span; blocks are cut below it */
    char *fresh_floor;                   /* the lowest byte of the feed span written since it was mapped */
    uint32_t group_bitmap;
    uint32_t kept_spans;                 /* empty spans kept in the last bin */
    uint32_t kept_swept_ms;              /* fm5_os_tick_ms when they were last looked at for age */
    uint32_t bin_bitmaps[FM5_MEDIUM_BIN_GROUP_COUNT];
    fm5_medium_free_links *bins[FM5_MEDIUM_BIN_COUNT];
} fm5_medium_manager;

_Static_assert(sizeof(fm5_medium_header) == FM5_MEDIUM_HEADER_SIZE, "medium header is 8 bytes");
_Static_assert(sizeof(fm5_medium_span) == 64, "medium span header is one cache line");
extern fm5_medium_manager fm5_medium_managers[FM5_MAXIMUM_ARENA_COUNT];
extern size_t fm5_medium_contention_count;
/* Arenas in use, the first of fm5_medium_managers: fixed while fm5 holds memory (fm5.h). */
extern uint32_t fm5_medium_arena_count;

FM5_INLINE fm5_medium_header *fm5_medium_header_of(const void *user)
{
    return (fm5_medium_header *)((char *)user - FM5_MEDIUM_HEADER_SIZE);
}

/* The header's fields are stored whole (medium_blocks.c, write_header) and read whole: a free that
 * has not yet claimed its block, a pointer check or a walk may read them while the arena's lock
 * holder rewrites them (relaxed atomics: plain moves on x86). */
FM5_INLINE size_t fm5_medium_block_size(const void *user)
{
    return (size_t)__atomic_load_n(&fm5_medium_header_of(user)->size_multiple, __ATOMIC_RELAXED) *
           FM5_MEDIUM_ALIGNMENT;
}

FM5_INLINE fm5_medium_span *fm5_medium_span_of(const void *user)
{
    return (fm5_medium_span *)((char *)user -
                               (size_t)__atomic_load_n(&fm5_medium_header_of(user)->span_offset_multiple,
                                                       __ATOMIC_RELAXED) *
                                   FM5_MEDIUM_ALIGNMENT);
}

/* Block size (header included) that serves `user_size` bytes: the next bin size. */
size_t fm5_medium_block_size_for(size_t user_size);

void fm5_medium_initialize(void);
/* Only while fm5 holds no memory and nothing allocates (api/tuning.c). */
void fm5_medium_set_arena_count(unsigned count);

/* A block of at least `block_size` bytes (a bin size); NULL if the OS refuses memory. */
void *fm5_medium_allocate(size_t block_size);
/* The same, and *zeroed = 1 when every user byte of the block is zero because nothing has written it
 * since the OS mapped it (carved from a new span's unfed space, which no block has been given back
 * to); 0 otherwise. AllocMem then need not zero it. */
void *fm5_medium_allocate_noting_zero(size_t block_size, int *zeroed);
void *fm5_medium_get_mem(size_t user_size);

/* For a block that fm5_identify_block proved to be a live medium block (or small-block span).
 * Returns 0, or -1 if another thread freed it first. */
int fm5_medium_free(void *user);

/* The thread caches' medium blocks (blocks/thread_cache.h). The claim turns a live block without
 * debug information into a cached one (FM5_STATUS_MEDIUM_CACHED), by compare-and-swap or, while the
 * caching thread (whose claimer record is `mine`) is the sole claimer, plainly (blocks/claims.h): 0
 * if it was not live (freed by another thread meanwhile). The release hands a cached block back as a free would,
 * under the lock if it is free now, else queued on the pending list: it never waits. */
int fm5_medium_claim_for_cache(void *user, fm5_claimer *mine);
void fm5_medium_release_cached(void *user);

/* ReallocMem of a live medium block within its arena, by FastMM5's rules but one: `user` when it stays
 * (a new size of at least half its usable size, or a growth into the free block after it), another
 * block of the arena when it shrinks below half and a free block smaller than itself fits the new
 * size (the content copied, `user` freed), else `user` shrunk in place (from 720 bytes); NULL when the
 * caller must move it (a growth without room, a shrink below 720 bytes). */
void *fm5_medium_resize(void *user, size_t new_user_size);

/* One bit per 64 bytes of span, set where a block starts. */
FM5_INLINE uint32_t *fm5_medium_block_start_bitmap(const fm5_medium_span *span)
{
    return (uint32_t *)((char *)span + sizeof(fm5_medium_span));
}

/* Is `user` the start of a block in its span? */
FM5_INLINE int fm5_medium_is_block_start(const fm5_medium_span *span, const void *user)
{
    size_t index = (size_t)((const char *)user - (const char *)span) / FM5_MEDIUM_ALIGNMENT;
    if (index * FM5_MEDIUM_ALIGNMENT >= span->span_size)
        return 0;
    return (__atomic_load_n(&fm5_medium_block_start_bitmap(span)[index / 32], __ATOMIC_RELAXED) >> (index % 32)) & 1;
}

int fm5_medium_process_pending_frees(int wait);

/* ---- kept empty spans ---------------------------------------------------------------------------
 * A span whose last block is freed is not unmapped at once: a program whose medium blocks all go and
 * come back (each pass of FastCode's raw performance test ends so, and every round of the downsize and
 * upsize tests, whose small blocks live in medium blocks) would pay the OS a mapping and a page fault
 * for every page it touches again; measured, that was half of raw_perf_1's time at scale 0.1, and half
 * of tiny_downsize's and verysmall_downsize's at scale 0.5 (a 16 MB bound against 128 MB, Win64,
 * 2026-12-06). So the span stays, one free block in its manager's last bin, served as any free block
 * is. Every span left empty is kept (the low-memory strategy keeps none), bounded two ways:
 * - by age: while the kept spans of all medium managers together hold more than
 *   FM5_MEDIUM_KEPT_SPAN_BYTES (fm5.h's FastMM_KeptMediumSpanBytes), one kept for
 *   FM5_MEDIUM_KEPT_SPAN_AGE_MS goes back to the OS at its manager's next allocation or free (looked
 *   for at most every half of that), as the large-block cache's regions do; a program whose medium
 *   blocks come back within a second of going finds their spans, and one that stays smaller gives them
 *   back after a second of its own calls;
 * - by the peak: a manager that needs a new span first returns what the others keep (those whose
 *   lock it gets at once) if the new span would take the medium spans mapped past the most they have
 *   been since start-up or the last FastMM_ProcessAllPendingFrees, so that kept spans do not make a
 *   program's medium space larger than it has been while another manager could give way (a kept span
 *   is always part of that space, so it needs no bound in bytes).
 * They count in the memory usage, as free medium space. FastMM_ProcessAllPendingFrees returns them to
 * the OS, and so does a manager that needs a new span that the OS or the usage limit refuses, before
 * it tries again. */
#define FM5_MEDIUM_KEPT_SPAN_BYTES ((size_t)16 << 20)
#define FM5_MEDIUM_KEPT_SPAN_AGE_MS 1000u
/* Returns the kept spans to the OS: those of every manager when `wait` (for its lock), else of those
 * that can be locked now; 0 if some were passed over. When none was, the peak that bounds them starts
 * again from the spans mapped now. */
int fm5_medium_release_kept_spans(int wait);
/* Bytes of the spans kept (a hint, read without the locks). */
size_t fm5_medium_kept_span_bytes(void);
#if FM5_CHECKED
/* A test's hook, in checked builds only: the first pass of a medium allocation passes over the arenas
 * whose bits are set, as over a busy one, so that a test can leave another manager's kept spans to
 * the peak rule alone (test_os_failures). 0 unless a test sets it. */
extern uint32_t fm5_medium_first_pass_skips;
#endif
/* A quarantined block (blocks/recycling.h) goes back into its bin if the freed-block check now finds
 * it intact (recycled instead once debug mode is off): returns 1 then, 0 if it must stay quarantined.
 * Takes the arena's lock. */
int fm5_medium_requeue_quarantined(void *user);
/* After debug mode: every freed debug block in a bin of every arena goes through the freed-block
 * check, and then is merged and released as a free of it would be now, or (corrupted) reported and
 * quarantined; then free neighbours that "never merge" kept apart are merged. Quarantined blocks
 * stay as they are. Takes each arena's lock in turn, waiting at most `timeout_ms`, and holds no
 * other lock. Returns 0 if an arena stayed busy or debug mode came back meanwhile (its blocks are
 * then left for its end). */
int fm5_medium_recycle_freed_debug_blocks(uint32_t timeout_ms);

/* A checked build's audit of one arena, under its lock: the invariants above. */
void fm5_medium_check_manager(const fm5_medium_manager *manager);

#endif
