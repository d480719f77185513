/* The usage counter and limit, and the Win32 emergency reserve, around the OS mappings. */
#include "base/memory_usage.h"
#include "base/events.h"

#define LIMIT_GRACE_BYTES ((size_t)32 << 20)
#define EMERGENCY_RESERVE_BYTES ((size_t)8 << 20)

static volatile size_t usage_current;
static size_t usage_limit;
static volatile int32_t limit_grace_used;
#ifdef FM5_32BIT
/* On Win32 address space runs out before memory does; a reserve released on the first failure
 * leaves room for the program to handle the error. */
static void *volatile emergency_reserve;
#endif

void fm5_memory_initialize(void)
{
#ifdef FM5_32BIT
    if (!emergency_reserve)
        emergency_reserve = fm5_os_reserve_inaccessible(NULL, EMERGENCY_RESERVE_BYTES);
#endif
}

static int charge_usage(size_t size)
{
    size_t after = __atomic_add_fetch(&usage_current, size, __ATOMIC_RELAXED);
    size_t limit = __atomic_load_n(&usage_limit, __ATOMIC_RELAXED);
    if (limit == 0 || after <= limit)
        return 1;
    __atomic_sub_fetch(&usage_current, size, __ATOMIC_RELAXED);
    return 0;
}

static void refund_usage(size_t size)
{
    __atomic_sub_fetch(&usage_current, size, __ATOMIC_RELAXED);
}

void *fm5_memory_map(size_t size, int top_down)
{
    if (!charge_usage(size)) {
        int first = __atomic_exchange_n(&limit_grace_used, 1, __ATOMIC_ACQ_REL) == 0;
        if (first)
            __atomic_add_fetch(&usage_limit, LIMIT_GRACE_BYTES, __ATOMIC_RELAXED);
        fm5_event_report(FastMM_EventMemoryLimitExceeded, NULL, size,
                         first ? "the memory usage limit would be exceeded; the limit was raised once by 32 MB "
                                 "so that the program can handle the failure"
                               : "the memory usage limit would be exceeded");
        return NULL;
    }
    void *p = fm5_os_map(size, top_down);
#ifdef FM5_32BIT
    if (!p) {
        void *reserve = __atomic_exchange_n(&emergency_reserve, NULL, __ATOMIC_ACQ_REL);
        if (reserve) {
            fm5_os_unmap(reserve, EMERGENCY_RESERVE_BYTES, 1);
            p = fm5_os_map(size, top_down);
        }
    }
#endif
    if (!p) {
        refund_usage(size);
        fm5_event_report(FastMM_EventOutOfMemory, NULL, size, "the operating system refused to provide memory");
    }
    return p;
}

int fm5_memory_map_at(void *address, size_t size)
{
    if (!charge_usage(size))
        return 0;
    if (fm5_os_map_at(address, size))
        return 1;
    refund_usage(size);
    return 0;
}

int fm5_memory_unmap(void *base, size_t size, unsigned mappings)
{
    if (fm5_os_unmap(base, size, mappings)) {
        refund_usage(size);
        return 1;
    }
    /* Still mapped, so still counted: the usage figure stays what the OS holds for fm5. */
    fm5_event_report(FastMM_EventReleaseFailed, base, size,
                     "the operating system refused to take memory back; it stays mapped and counted");
    return 0;
}

size_t fm5_memory_usage(void)
{
    return __atomic_load_n(&usage_current, __ATOMIC_RELAXED);
}

void fm5_memory_set_limit(size_t limit)
{
    __atomic_store_n(&usage_limit, limit, __ATOMIC_RELAXED);
    __atomic_store_n(&limit_grace_used, 0, __ATOMIC_RELAXED);
}

size_t fm5_memory_limit(void)
{
    return __atomic_load_n(&usage_limit, __ATOMIC_RELAXED);
}
