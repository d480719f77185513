/* The recycling options and the freed-block check that debug mode gives the release managers. */
#include "blocks/recycling.h"

volatile unsigned fm5_recycling_options;
static fm5_freed_block_check freed_block_check;

void fm5_recycling_set_freed_block_check(fm5_freed_block_check check)
{
    __atomic_store_n(&freed_block_check, check, __ATOMIC_RELEASE);
}

int fm5_recycling_may_reuse(void *outer, size_t outer_usable)
{
    fm5_freed_block_check check = __atomic_load_n(&freed_block_check, __ATOMIC_ACQUIRE);
    return check ? check(outer, outer_usable) : 1;
}
