#include "fm5.h"
#include "debug/erase_modes.h"
#include "base/os.h"
#include "blocks/thread_cache.h"

volatile int fm5_erase_allocated_active;
volatile int fm5_erase_freed_active;

/* Read and written under erase_lock only. */
static long erase_allocated_count;
static long erase_freed_count;
/* Orders the flags' and the thread caches' changes as the counts' (taken with no other lock held; the
 * caches' record lock is taken under it). */
static fm5_lock erase_lock;

/* Returns -1 when an End has no Begin to match; the flag follows the count. Either mode holds the
 * thread caches off (blocks/thread_cache.h), so that the asm fast paths need not test the flags
 * before a cache's pop or push: a flag is set before the epoch turns even and cleared before it
 * turns odd. */
static int adjust(long *count, volatile int *active, long delta)
{
    fm5_lock_with_timeout(&erase_lock, FM5_WAIT_FOREVER);
    if (*count + delta < 0) {
        fm5_unlock(&erase_lock);
        return -1;
    }
    *count += delta;
    *active = *count > 0;
    fm5_thread_cache_hold(FM5_CACHE_OFF_IN_ERASE_MODE, fm5_erase_allocated_active | fm5_erase_freed_active);
    fm5_unlock(&erase_lock);
    return 0;
}

void FM5_CALL FastMM_BeginEraseAllocatedBlockContent(void)
{
    adjust(&erase_allocated_count, &fm5_erase_allocated_active, 1);
}

int FM5_CALL FastMM_EndEraseAllocatedBlockContent(void)
{
    return adjust(&erase_allocated_count, &fm5_erase_allocated_active, -1);
}

int FM5_CALL FastMM_EraseAllocatedBlockContentActive(void)
{
    return fm5_erase_allocated_active;
}

void FM5_CALL FastMM_BeginEraseFreedBlockContent(void)
{
    adjust(&erase_freed_count, &fm5_erase_freed_active, 1);
}

int FM5_CALL FastMM_EndEraseFreedBlockContent(void)
{
    return adjust(&erase_freed_count, &fm5_erase_freed_active, -1);
}

int FM5_CALL FastMM_EraseFreedBlockContentActive(void)
{
    return fm5_erase_freed_active;
}
