/* The trusting stand-in for src/blocks/pointer_checks.h that scripts/measure-pointer-validation.sh
 * builds fm5 with (this folder first on the include path): the status word is believed as FastMM5
 * believes it, so that the paired runs price fm5's checks. Never shipped. */
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

FM5_INLINE int fm5_status_word_is_ours(const void *user)
{
    return user != NULL;
}

FM5_INLINE fm5_small_span *fm5_small_block_span(const void *user, unsigned status)
{
    return fm5_small_span_of(user, status);
}

FM5_INLINE int fm5_medium_block_checks_out(const void *user)
{
    (void)user;
    return 1;
}

FM5_INLINE int fm5_large_block_checks_out(const void *user)
{
    (void)user;
    return 1;
}

#endif
