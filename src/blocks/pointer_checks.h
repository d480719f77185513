/* The tests that prove a caller's pointer is one of fm5's blocks before anything behind it is trusted:
 * the address map first (so a wild pointer is refused without being read), then the owning span's
 * bookkeeping. block_identity.c decides what a pointer is from these alone; FreeMem's fast paths (C and
 * asm/) make the first two.
 *
 * scripts/measure-pointer-validation.sh prices them by building fm5 with a trusting version of this one
 * header (scripts/measure/trusting/blocks/pointer_checks.h, found first on its include path); nothing
 * in src/ is conditional on that. */
#ifndef FM5_POINTER_CHECKS_H
#define FM5_POINTER_CHECKS_H

#include "base/platform.h"
#include "base/address_map.h"
#include "base/os.h"
#include "blocks/geometry.h"
#include "blocks/block_status.h"
#include "blocks/small_blocks.h"
#include "blocks/medium_blocks.h"
#include "blocks/large_blocks.h"

/* Is `user` aligned as every fm5 block is, and its status word in memory that fm5 owns? NULL fails too:
 * address 0 - 1 is never fm5's. */
FM5_INLINE int fm5_status_word_is_ours(const void *user)
{
    return (uintptr_t)user % FM5_DEFAULT_MINIMUM_ALIGNMENT == 0 &&
           fm5_granule_owner((uintptr_t)user - 1) != FM5_GRANULE_NOT_OURS;
}

/* Is the 64-byte span header that the status word of `user` names in memory that fm5 owns? The caller
 * has proved the granule of the status word (fm5_status_word_is_ours). The header must end at or before
 * `user` (a span's blocks follow its header) and start no lower than that granule's run reaches
 * (address_map.h): every address in between is then of one fm5 region, or of the proved granule, with
 * no second look-up. A span's header lies at most FM5_SMALL_MAXIMUM_SPAN_REACH before its blocks, which
 * the run limit covers, so no real span fails. */
FM5_INLINE int fm5_small_span_header_is_ours(const fm5_small_span *span, const void *user)
{
    uintptr_t lowest = fm5_granule_run_start((uintptr_t)user - 1, fm5_granule_owner((uintptr_t)user - 1));
    return (uintptr_t)span >= lowest && (uintptr_t)span + FM5_SMALL_SPAN_HEADER_SIZE <= (uintptr_t)user;
}
_Static_assert(FM5_SMALL_MAXIMUM_SPAN_REACH <= (FM5_GRANULE_RUN_LIMIT << FM5_GRANULE_SHIFT),
               "a small span's header is always within the run that the status word's granule proves");

/* The span of the small block at `user`, whose status word `status` says it is small, or NULL when the
 * span's bookkeeping does not vouch for a block starting exactly there. The caller has proved that the
 * status word is fm5's. */
FM5_INLINE fm5_small_span *fm5_small_block_span(const void *user, unsigned status)
{
    fm5_small_span *span = fm5_small_span_of(user, status);
    if (!fm5_small_span_header_is_ours(span, user))
        return NULL;
    fm5_small_manager *manager = span->manager;
    if (span->identity_tag != fm5_small_span_tag(span) || !fm5_is_small_manager(manager) ||
        span->class_slot >= FM5_SMALL_CLASS_COUNT || !fm5_small_is_block_start(span, user))
        return NULL;
    return span;
}

/* Does a block start at `user` in a medium span of fm5's? The status word says medium. */
FM5_INLINE int fm5_medium_block_checks_out(const void *user)
{
    if ((uintptr_t)user % FM5_MEDIUM_ALIGNMENT)
        return 0;
    const fm5_medium_span *span = fm5_medium_span_of(user);
    return fm5_granule_owner((uintptr_t)span) == FM5_GRANULE_MEDIUM_SPAN && (uintptr_t)span % FM5_OS_GRANULARITY == 0 &&
           fm5_medium_is_block_start(span, user);
}

/* Is `user` the user area of a large block of fm5's? The status word says large. */
FM5_INLINE int fm5_large_block_checks_out(const void *user)
{
    const fm5_large_header *header = fm5_large_header_of(user);
    return (uintptr_t)header % FM5_OS_GRANULARITY == 0 &&
           fm5_granule_owner((uintptr_t)header) == FM5_GRANULE_LARGE_BLOCK && fm5_is_large_manager(header->manager);
}

#endif
