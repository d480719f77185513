/* Debug-mode options that change how the release-mode managers recycle memory. Debug mode (a later part
 * of fm5) sets them; release mode leaves both off. */
#ifndef FM5_DEBUG_OPTIONS_H
#define FM5_DEBUG_OPTIONS_H

#include "platform.h"

#define FM5_DEBUG_NEVER_FREE_SMALL_BLOCK_SPANS 1u
#define FM5_DEBUG_NEVER_MERGE_FREE_MEDIUM_BLOCKS 2u

extern volatile unsigned fm5_active_debug_options;

FM5_INLINE int fm5_debug_never_free_small_block_spans(void)
{
    return (fm5_active_debug_options & FM5_DEBUG_NEVER_FREE_SMALL_BLOCK_SPANS) != 0;
}

FM5_INLINE int fm5_debug_never_merge_medium_blocks(void)
{
    return (fm5_active_debug_options & FM5_DEBUG_NEVER_MERGE_FREE_MEDIUM_BLOCKS) != 0;
}

#endif
