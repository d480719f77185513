/* What a pointer given to FreeMem, ReallocMem or a size query is, decided without touching memory that
 * fm5 does not own: the address map first, then the status word, then the owning span's bookkeeping. */
#ifndef FM5_BLOCK_IDENTITY_H
#define FM5_BLOCK_IDENTITY_H

#include "base/platform.h"
#include "base/address_map.h"
#include "blocks/small_blocks.h"
#include "blocks/medium_blocks.h"
#include "base/memory_usage.h"

enum fm5_block_identity {
    FM5_NOT_A_BLOCK = 0,     /* foreign, interior, misaligned or wild */
    FM5_FREED_BLOCK,         /* a block of fm5 that is free already */
    FM5_LIVE_SMALL_BLOCK,
    FM5_LIVE_MEDIUM_BLOCK,
    FM5_LIVE_LARGE_BLOCK,
    FM5_LIVE_DEBUG_BLOCK     /* a debug sub-block; facts.owner is its outer block */
};

typedef struct fm5_block_facts {
    void *owner;             /* the small-block span, or a debug block's outer block */
    const char *problem;     /* for FM5_NOT_A_BLOCK: why */
    int outer_identity;      /* for debug blocks: what the outer block is */
    void *outer_owner;       /* for debug blocks: the outer block's owner */
} fm5_block_facts;

enum fm5_block_identity fm5_identify_block(const void *user, fm5_block_facts *facts);

/* What a live block can hold; for a debug block, what its outer block can hold for the sub-block. */
size_t fm5_live_block_usable_size(const void *user, enum fm5_block_identity identity, const fm5_block_facts *facts);

/* The span of the small block at `user`, whose status word `status` says it is small, or NULL when the
 * span's bookkeeping does not vouch for a block starting exactly there. The caller has proved that the
 * status word is fm5's (fm5_status_word_is_ours). Inline: FreeMem's fast path runs it. */
FM5_INLINE fm5_small_span *fm5_small_block_span(const void *user, unsigned status)
{
#ifdef FM5_MEASURE_WITHOUT_POINTER_VALIDATION
    return fm5_small_span_of(user, status);
#endif
    fm5_small_span *span = fm5_small_span_of(user, status);
    /* The span header is one 64-byte line, so in one granule; it needs no look-up when that is the
     * granule already proved to hold the status word. */
    if ((((uintptr_t)span ^ ((uintptr_t)user - 1)) >> FM5_GRANULE_SHIFT) != 0 &&
        fm5_granule_owner((uintptr_t)span) == FM5_GRANULE_NOT_OURS)
        return NULL;
    fm5_small_manager *manager = span->manager;
    if (span->identity_tag != fm5_small_span_tag(span) || !fm5_is_small_manager(manager) ||
        !fm5_small_is_block_start(span, manager, user))
        return NULL;
    return span;
}

/* Is `user` aligned as every fm5 block is, and its status word in memory that fm5 owns? NULL fails too:
 * address 0 - 1 is never fm5's. */
FM5_INLINE int fm5_status_word_is_ours(const void *user)
{
#ifdef FM5_MEASURE_WITHOUT_POINTER_VALIDATION
    /* Trust the caller, as FastMM5 does: only to price the checks (measure-pointer-validation.sh). */
    return user != NULL;
#endif
    return (uintptr_t)user % FM5_DEFAULT_MINIMUM_ALIGNMENT == 0 &&
           fm5_granule_owner((uintptr_t)user - 1) != FM5_GRANULE_NOT_OURS;
}

#endif
