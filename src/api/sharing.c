/* Forwarding to another module's shared memory manager (api/sharing.h). */
#include "api/sharing.h"
#include "base/platform.h"

volatile int fm5_using_shared_manager;

/* Written once, before fm5_using_shared_manager is released: a reader that sees the flag sees this. */
static fm5_delphi_memory_manager shared_manager;

void fm5_start_using_shared_manager(const fm5_delphi_memory_manager *manager)
{
    shared_manager = *manager;
    __atomic_store_n(&fm5_using_shared_manager, 1, __ATOMIC_RELEASE);
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
