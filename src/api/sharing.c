/* Forwarding to another module's shared memory manager (api/sharing.h). */
#include "api/sharing.h"
#include "base/platform.h"
#include "blocks/thread_cache.h"

volatile int fm5_using_shared_manager;

/* Written once, before fm5_using_shared_manager is released: a reader that sees the flag sees this. */
static fm5_delphi_memory_manager shared_manager;

void fm5_start_using_shared_manager(const fm5_delphi_memory_manager *manager)
{
    shared_manager = *manager;
    __atomic_store_n(&fm5_using_shared_manager, 1, __ATOMIC_RELEASE);
    /* The caches go off for good, so that an odd epoch says no shared manager (blocks/thread_cache.h). */
    fm5_thread_cache_hold(FM5_CACHE_OFF_SHARED_MANAGER, 1);
}

void *fm5_shared_get_mem(size_t size)
{
    return (void *)fm5_delphi_call1(shared_manager.get_mem, size);
}

void *fm5_shared_alloc_mem(size_t size)
{
    return (void *)fm5_delphi_call1(shared_manager.alloc_mem, size);
}

/* Delphi's FreeMem answers an Integer: 0 when the block was freed. */
int fm5_shared_free_mem(void *p)
{
    return (int)fm5_delphi_call1(shared_manager.free_mem, (size_t)p);
}

void *fm5_shared_realloc_mem(void *p, size_t size)
{
    return (void *)fm5_delphi_call2(shared_manager.realloc_mem, (size_t)p, size);
}
