/* The C standard family on top of the FastMM5 entry points, with C (and Microsoft CRT) semantics. */
#include "fm5.h"
#include "base/address_map.h"
#include "base/platform.h"
#include <stdint.h>

FM5_TAIL_ONLY void *FM5_CALL fm5_malloc(size_t size)
{
    return FastMM_GetMem(size);
}

FM5_TAIL_ONLY void *FM5_CALL fm5_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    return FastMM_AllocMem(count * size);
}

/* realloc(p, 0): free, answer NULL. Apart, so that fm5_realloc's every path is a tail jump. */
static FM5_NOINLINE void *free_for_realloc(void *p)
{
    FastMM_FreeMem(p);
    return NULL;
}

FM5_TAIL_ONLY void *FM5_CALL fm5_realloc(void *p, size_t size)
{
    if (!p)
        return FastMM_GetMem(size);
    if (size == 0)
        return free_for_realloc(p);
    return FastMM_ReallocMem(p, size);
}

FM5_TAIL_ONLY void FM5_CALL fm5_free(void *p)
{
    if (p)
        FastMM_FreeMem(p);
}

size_t FM5_CALL fm5_usable_size(void *p)
{
    return p ? FastMM_BlockMaximumUserBytes(p) : 0;
}

int FM5_CALL fm5_owns(const void *p)
{
    return fm5_granule_owner((uintptr_t)p) != FM5_GRANULE_NOT_OURS;
}
