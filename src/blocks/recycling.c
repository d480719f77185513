/* The recycling options and the freed-block check that debug mode gives the release managers, and
 * the quarantine of the blocks the check refused. */
#include "blocks/recycling.h"
#include "blocks/arena.h"

volatile unsigned fm5_recycling_options;
static fm5_freed_block_check freed_block_check;
/* A pending-free list in all but name: pushes from any manager, one taker at a time (the take is an
 * exchange of the whole list, so the list has no ABA problem: blocks/arena.h). */
static void *volatile quarantined_blocks;

void fm5_recycling_set_freed_block_check(fm5_freed_block_check check)
{
    __atomic_store_n(&freed_block_check, check, __ATOMIC_RELEASE);
}

int fm5_recycling_may_reuse(void *outer, size_t outer_usable, int report)
{
    fm5_freed_block_check check = __atomic_load_n(&freed_block_check, __ATOMIC_ACQUIRE);
    return check ? check(outer, outer_usable, report) : 1;
}

void fm5_recycling_quarantine(void *outer)
{
    fm5_pending_push(&quarantined_blocks, outer);
}

void *fm5_recycling_take_quarantine(void)
{
    return fm5_pending_take_all(&quarantined_blocks);
}
