/* What the release managers ask before they recycle memory, set by a higher layer (debug mode) that
 * they know nothing of, and the quarantine of freed blocks that must not be recycled yet. Release mode
 * leaves every option off and no check installed. */
#ifndef FM5_RECYCLING_H
#define FM5_RECYCLING_H

#include "base/platform.h"

/* Keep small-block spans whose blocks are all free (FastMM5's "never free small-block spans"). */
#define FM5_RECYCLING_KEEP_EMPTY_SMALL_SPANS 1u
/* Never merge a freed medium block with its free neighbours (FastMM5's "never merge"). */
#define FM5_RECYCLING_NEVER_MERGE_MEDIUM_BLOCKS 2u
/* Return every freed large block to the OS at once, so that a use after free faults (no cache). */
#define FM5_RECYCLING_NO_LARGE_REGION_CACHE 4u
/* Keep a freed debug block as it is, its debug information checked before its memory is reused: set
 * exactly while debug mode is on. Off, a freed debug block is checked and recycled at once (see
 * fm5_release_recycle_freed_debug_blocks for those freed before). */
#define FM5_RECYCLING_KEEP_FREED_DEBUG_BLOCKS 8u

extern volatile unsigned fm5_recycling_options;

/* Debug mode changes the options while other threads' frees read them: whole loads and stores
 * (relaxed atomics, plain moves on x86). A manager reads them under its lock, which orders the read
 * after any change made before the lock's last holder took it. */
FM5_INLINE unsigned fm5_recycling_load_options(void)
{
    return __atomic_load_n(&fm5_recycling_options, __ATOMIC_RELAXED);
}

/* Asked, under the manager's lock, before a freed block whose status says HasDebugInfo is handed out
 * again, and (with `report` 0) when a quarantined block is looked at again: `outer` is the block,
 * `outer_usable` what it holds. Returns 1 if it may be reused; 0 if it must stay out of circulation,
 * after reporting why when `report`. Must not take a manager lock. */
typedef int (*fm5_freed_block_check)(void *outer, size_t outer_usable, int report);

/* Installed once at start-up, before any block carries HasDebugInfo. */
void fm5_recycling_set_freed_block_check(fm5_freed_block_check check);

/* The check of the freed block at `outer`: always 1 when none is installed. */
int fm5_recycling_may_reuse(void *outer, size_t outer_usable, int report);

/* ---- the quarantine ----------------------------------------------------------------------------
 * A freed small or medium block that the check refused is quarantined: it keeps its status (free,
 * with HasDebugInfo, so that walks and scans still see and check it), stays on no free list or bin
 * (a small one counts as in use, so its span is never released), and goes on this lock-free list,
 * linked through its first pointer (a debug header's free-list word). The managers push;
 * fm5_release_requeue_quarantine (release_engine.h) takes the whole list and hands back to their
 * managers the blocks that are intact again. */
void fm5_recycling_quarantine(void *outer);
/* The whole list, emptied (NULL if none); push back with fm5_recycling_quarantine. */
void *fm5_recycling_take_quarantine(void);

FM5_INLINE int fm5_recycling_keeps_empty_small_spans(void)
{
    return (fm5_recycling_load_options() & FM5_RECYCLING_KEEP_EMPTY_SMALL_SPANS) != 0;
}

FM5_INLINE int fm5_recycling_caches_large_regions(void)
{
    return (fm5_recycling_load_options() & FM5_RECYCLING_NO_LARGE_REGION_CACHE) == 0;
}

FM5_INLINE int fm5_recycling_never_merges_medium_blocks(void)
{
    return (fm5_recycling_load_options() & FM5_RECYCLING_NEVER_MERGE_MEDIUM_BLOCKS) != 0;
}

FM5_INLINE int fm5_recycling_keeps_freed_debug_blocks(void)
{
    return (fm5_recycling_load_options() & FM5_RECYCLING_KEEP_FREED_DEBUG_BLOCKS) != 0;
}

#endif
