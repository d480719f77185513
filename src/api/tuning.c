/* Optimization strategy, minimum address alignment, memory usage limit and contention counters. */
#include "fm5.h"
#include "blocks/strategy.h"
#include "blocks/small_block_classes.h"
#include "blocks/small_blocks.h"
#include "blocks/medium_blocks.h"
#include "blocks/large_blocks.h"
#include "base/memory_usage.h"
#include "base/events.h"

int FM5_CALL FastMM_SetOptimizationStrategy(int strategy)
{
    if (strategy < FastMM_OptimizeForSpeed || strategy > FastMM_OptimizeForLowMemoryUsage) {
        fm5_event_report(FastMM_EventInvalidArgument, NULL, 0, "FastMM_SetOptimizationStrategy: unknown strategy");
        return -1;
    }
    fm5_optimization_strategy = strategy;
    return 0;
}

int FM5_CALL FastMM_GetCurrentOptimizationStrategy(void)
{
    return fm5_optimization_strategy;
}

/* ---- minimum address alignment: nested requests per value, the coarsest wins ------------------ */

static fm5_lock alignment_lock;
static unsigned alignment_requests[4];  /* for 8, 16, 32 and 64 bytes */
static volatile unsigned current_alignment = FM5_DEFAULT_MINIMUM_ALIGNMENT;

static int alignment_index(unsigned alignment)
{
    switch (alignment) {
    case 8: return 0;
    case 16: return 1;
    case 32: return 2;
    case 64: return 3;
    default: return -1;
    }
}

static void apply_alignment_locked(void)
{
    unsigned alignment = FM5_DEFAULT_MINIMUM_ALIGNMENT;
    for (int i = 3; i >= 0; i--) {
        if (alignment_requests[i]) {
            if ((8u << i) > alignment)
                alignment = 8u << i;
            break;
        }
    }
    if (alignment != current_alignment) {
        fm5_small_lookup_rebuild(alignment);
        current_alignment = alignment;
    }
}

static int change_alignment(unsigned alignment, int enter)
{
    int index = alignment_index(alignment);
    if (index < 0) {
        fm5_event_report(FastMM_EventInvalidArgument, NULL, alignment,
                         "minimum address alignment must be 8, 16, 32 or 64 bytes");
        return -1;
    }
    fm5_lock_with_timeout(&alignment_lock, FM5_WAIT_FOREVER);
    int result = 0;
    if (enter) {
        alignment_requests[index]++;
    } else if (alignment_requests[index]) {
        alignment_requests[index]--;
    } else {
        result = -1;
    }
    if (result == 0)
        apply_alignment_locked();
    fm5_unlock(&alignment_lock);
    if (result)
        fm5_event_report(FastMM_EventInvalidArgument, NULL, alignment,
                         "FastMM_ExitMinimumAddressAlignment without a matching Enter");
    return result;
}

int FM5_CALL FastMM_EnterMinimumAddressAlignment(unsigned alignment)
{
    return change_alignment(alignment, 1);
}

int FM5_CALL FastMM_ExitMinimumAddressAlignment(unsigned alignment)
{
    return change_alignment(alignment, 0);
}

unsigned FM5_CALL FastMM_GetCurrentMinimumAddressAlignment(void)
{
    return current_alignment;
}

/* ---- memory usage ----------------------------------------------------------------------------- */

void FM5_CALL FastMM_SetMemoryUsageLimit(size_t limit)
{
    fm5_memory_set_limit(limit);
}

size_t FM5_CALL FastMM_GetMemoryUsageLimit(void)
{
    return fm5_memory_limit();
}

size_t FM5_CALL FastMM_GetCurrentMemoryUsage(void)
{
    return fm5_memory_usage();
}

size_t FM5_CALL FastMM_SmallBlockThreadContentionCount(void)
{
    return fm5_small_contention_count;
}

size_t FM5_CALL FastMM_MediumBlockThreadContentionCount(void)
{
    return fm5_medium_contention_count;
}

size_t FM5_CALL FastMM_LargeBlockThreadContentionCount(void)
{
    return fm5_large_contention_count;
}
