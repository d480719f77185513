#include "fm5.h"
#include "debug/erase_modes.h"

volatile int fm5_erase_allocated_active;
volatile int fm5_erase_freed_active;

static volatile long erase_allocated_count;
static volatile long erase_freed_count;

/* Returns -1 when an End has no Begin to match; the flag follows the count. */
static int adjust(volatile long *count, volatile int *active, long delta)
{
    long value;
    do {
        value = *count;
        if (value + delta < 0)
            return -1;
    } while (!__atomic_compare_exchange_n(count, &value, value + delta, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    *active = value + delta > 0;
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
