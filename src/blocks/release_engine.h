/* The release engine: GetMem, FreeMem and ReallocMem of ordinary blocks, by FastMM5's rules, without
 * debug mode or erase modes. Debug mode builds its blocks on it; the public entry points (api/) sit on
 * both. It never calls up: nothing here knows that debug blocks exist beyond their status word. */
#ifndef FM5_RELEASE_ENGINE_H
#define FM5_RELEASE_ENGINE_H

#include "base/platform.h"
#include "blocks/geometry.h"
#include "blocks/block_identity.h"
#include "blocks/small_blocks.h"
#include "blocks/thread_cache.h"
#include "blocks/medium_blocks.h"
#include "blocks/large_blocks.h"

/* A large block; when the OS or the usage limit refuses it, once more after the kept empty medium
 * spans (medium_blocks.h) have gone back. */
void *fm5_release_get_large_block(size_t size);

/* GetMem: the size picks the manager; *zeroed = 1 when the block's user bytes are zero because
 * nothing has written them since the OS mapped them (AllocMem's zero fill then has nothing to do): a
 * large block that did not come from the large-block cache, a medium block as
 * fm5_medium_allocate_noting_zero says; never a small one. */
FM5_INLINE void *fm5_release_get_mem_noting_zero(size_t size, int *zeroed)
{
    *zeroed = 0;
    if (FM5_LIKELY(size <= FM5_MAXIMUM_SMALL_USER_SIZE))
        return fm5_thread_cache_get_mem(size);
    if (size <= FM5_MAXIMUM_MEDIUM_USER_SIZE)
        return fm5_thread_cache_get_medium(size, zeroed);
    void *p = fm5_release_get_large_block(size);
    *zeroed = p && !fm5_large_header_of(p)->recycled;
    return p;
}

/* Inline for the public GetMem's fast path. */
FM5_INLINE void *fm5_release_get_mem_inline(size_t size)
{
    int zeroed;
    return fm5_release_get_mem_noting_zero(size, &zeroed);
}

/* The same out of line: for debug mode, and the asm's GetMem above the small range. */
void *fm5_release_get_mem(size_t size);

/* Frees a live ordinary block that fm5_identify_block has identified. Returns 0, or -1 when it was not
 * a live ordinary block (a debug block included) or another thread freed it first. */
int fm5_release_free_block(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts);

/* Identifies and frees an ordinary block that fm5 itself holds (a debug block's outer block); reports
 * an event and returns -1 if it is none. */
int fm5_release_free_mem(void *p);

/* The span of a live small block without debug information, proved without looking further, or NULL:
 * the fast paths of FreeMem and ReallocMem (the asm makes the same tests). */
FM5_INLINE fm5_small_span *fm5_release_live_small_block_span(void *p)
{
    if (FM5_UNLIKELY(!fm5_status_word_is_ours(p)))
        return NULL;
    unsigned status = *fm5_status_word(p);
    if (FM5_UNLIKELY(!fm5_status_is_live_small(status)))
        return NULL;
    return fm5_small_block_span(p, status);
}

/* Is `p` a live medium block without debug information, proved as fm5_identify_block would? FreeMem's
 * path past the small blocks; a block it turns down goes through the full identification. */
FM5_INLINE int fm5_release_is_live_medium_block(void *p)
{
    return FM5_LIKELY(fm5_status_word_is_ours(p)) && *fm5_status_word(p) == FM5_STATUS_MEDIUM &&
           FM5_LIKELY(fm5_medium_block_checks_out(p)) && !fm5_medium_header_of(p)->is_small_block_span;
}

/* ReallocMem of a live small block whose span is `span`: in place (FastMM5 PR #98) when the new size
 * still fits and the block would not be mostly empty, else moved, upsized with room to grow. */
void *fm5_release_realloc_small_block(void *p, size_t new_size, fm5_small_span *span);


/* ReallocMem of any live ordinary block: in place when the manager's rules allow, else moved (the old
 * block is released only once the new one exists). NULL, with the old block intact, on failure. */
void *fm5_release_realloc_block(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts,
                                size_t new_size);

/* Hands every quarantined block (blocks/recycling.h) that is intact again back to its manager; the
 * others stay quarantined. Debug mode's scan calls it after it has checked them all. */
void fm5_release_requeue_quarantine(void);

/* Debug mode has ended: the blocks it kept in place go back to ordinary recycling (small spans with no
 * block in use are released, freed medium debug blocks are merged), each checked first as before a
 * reuse; quarantined blocks stay as they are. Waits at most `timeout_ms` for each arena's lock and
 * holds no lock when called. Returns 0 if some blocks were left (an arena stayed busy, or debug mode
 * came back meanwhile): their next chance is the next end of debug mode. */
int fm5_release_recycle_freed_debug_blocks(uint32_t timeout_ms);

/* Releases the blocks queued on every arena's pending-free list whose lock is free now. Returns 1 if
 * nothing was left queued. */
int fm5_release_process_pending_frees(void);

#endif
