/* The 16-bit status word just before every user pointer. Its bits say which manager owns the block and
 * whether it is free; FreeMem and ReallocMem dispatch on it (after the address map has proved the word
 * is readable). */
#ifndef FM5_BLOCK_STATUS_H
#define FM5_BLOCK_STATUS_H

#include "base/platform.h"
#include "blocks/geometry.h"

#define FM5_STATUS_FREE 1u
#define FM5_STATUS_HAS_DEBUG_INFO 2u
#define FM5_STATUS_SMALL 4u
#define FM5_STATUS_MEDIUM 8u
#define FM5_STATUS_LARGE 16u
#define FM5_STATUS_DEBUG_SUB_BLOCK 32u
/* A medium or large block queued on a pending-free list: freed by its owner, not yet released. Small
 * blocks have no spare bit and use FM5_STATUS_FREE for the same purpose. */
#define FM5_STATUS_PENDING_FREE 64u
/* A medium block in a thread's cache (blocks/thread_cache.h): free to everything that asks whether it
 * is live (walks, leak reports, a second free), pending to its neighbours, which merge with and grow
 * into exactly FM5_STATUS_MEDIUM | FM5_STATUS_FREE only, and in no bin. */
#define FM5_STATUS_MEDIUM_CACHED (FM5_STATUS_MEDIUM | FM5_STATUS_FREE | FM5_STATUS_PENDING_FREE)

/* A small block keeps (offset of its 64-byte line from the span)/64 in bits 3..15 (geometry.h). */
_Static_assert((FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO | FM5_STATUS_SMALL) < (1u << FM5_SMALL_OFFSET_SHIFT),
               "a small block's flags fit below its offset bits");

/* A debug sub-block starts this far into its outer block: its status word (FM5_STATUS_DEBUG_SUB_BLOCK,
 * with FM5_STATUS_FREE once freed) is the last two bytes of the debug header (debug_block_layout.h).
 * The release layer needs only this to recognise one. */
#define FM5_DEBUG_SUB_BLOCK_OFFSET 64u

/* A live small block without debug information: the kind the small-block fast paths serve (the asm's
 * LIVE_SMALL_BLOCK makes the same test). */
FM5_INLINE int fm5_status_is_live_small(unsigned status)
{
    return (status & (FM5_STATUS_SMALL | FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO)) == FM5_STATUS_SMALL;
}

/* Small blocks keep their offset in the bits that mean "pending" for the others. */
FM5_INLINE int fm5_status_is_pending_free(unsigned status)
{
    return !(status & FM5_STATUS_SMALL) && (status & FM5_STATUS_PENDING_FREE);
}

FM5_INLINE volatile uint16_t *fm5_status_word(const void *user)
{
    return (volatile uint16_t *)user - 1;
}

/* A status word read or written where another thread may touch it at the same time (a pointer check,
 * a walk, a neighbour's merge test against its owner's pending-free CAS): one whole 16-bit access,
 * never torn (relaxed atomics: plain moves on x86). */
FM5_INLINE unsigned fm5_status_load(const void *user)
{
    return __atomic_load_n(fm5_status_word(user), __ATOMIC_RELAXED);
}

FM5_INLINE void fm5_status_store(const void *user, unsigned status)
{
    __atomic_store_n(fm5_status_word(user), (uint16_t)status, __ATOMIC_RELAXED);
}

#endif
