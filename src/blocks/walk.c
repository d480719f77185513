/* fm5_walk_all: the large arenas, then the medium arenas with the small-block spans inside them. */
#include "blocks/walk.h"

int fm5_walk_all(fm5_walk_visitor visitor, void *context, uint32_t timeout_ms)
{
    int large = fm5_large_walk(visitor, context, timeout_ms);
    if (large == FM5_WALK_STOPPED)
        return large;
    int medium = fm5_medium_walk(visitor, context, timeout_ms, fm5_small_walk_span);
    if (medium == FM5_WALK_STOPPED)
        return medium;
    return large == FM5_WALK_COMPLETE && medium == FM5_WALK_COMPLETE ? FM5_WALK_COMPLETE : FM5_WALK_INCOMPLETE;
}
