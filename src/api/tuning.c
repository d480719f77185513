/* Optimization strategy, minimum address alignment, memory usage limit, contention counters, arena
 * counts and arena affinity. */
#include "fm5.h"
#include "blocks/strategy.h"
#include "blocks/small_block_classes.h"
#include "blocks/small_blocks.h"
#include "blocks/medium_blocks.h"
#include "blocks/large_blocks.h"
#include "blocks/arena_affinity.h"
#include "blocks/thread_cache.h"
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
        fm5_thread_cache_request_flush();
        fm5_thread_cache_flush_current();
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

/* ---- arena counts ----------------------------------------------------------------------------- */

/* With no memory from the OS, no block, span or queued free exists in any arena (every block lives in
 * a mapping, and a span with unfed blocks counts them in use), so the counts may change: arenas below
 * the new count are prepared on first use, and nothing refers to one above it. */
int FM5_CALL FastMM_SetArenaCounts(unsigned small_arenas, unsigned medium_arenas, unsigned large_arenas)
{
    if (small_arenas > FM5_MAXIMUM_ARENA_COUNT || medium_arenas > FM5_MAXIMUM_ARENA_COUNT ||
        large_arenas > FM5_MAXIMUM_ARENA_COUNT) {
        fm5_event_report(FastMM_EventInvalidArgument, NULL, 0,
                         "FastMM_SetArenaCounts: a count is above FastMM_MaximumArenaCount (32)");
        return -1;
    }
    if (medium_arenas == 1) {
        /* docs/design.md, lock order: a walk holds one medium arena while it waits for a small
         * manager, which may need a medium block from another arena. */
        fm5_event_report(FastMM_EventInvalidArgument, NULL, 1, "FastMM_SetArenaCounts: at least 2 medium arenas");
        return -1;
    }
    /* The caller's cached blocks would keep their spans. */
    fm5_thread_cache_flush_current();
    if (fm5_memory_usage() != 0) {
        fm5_event_report(FastMM_EventInvalidArgument, NULL, 0,
                         "FastMM_SetArenaCounts: fm5 already holds memory; the counts are set before the first allocation");
        return -1;
    }
    if (small_arenas)
        fm5_small_set_arena_count(small_arenas);
    if (medium_arenas)
        fm5_medium_set_arena_count(medium_arenas);
    if (large_arenas)
        fm5_large_set_arena_count(large_arenas);
    return 0;
}

void FM5_CALL FastMM_GetArenaCounts(unsigned *small_arenas, unsigned *medium_arenas, unsigned *large_arenas)
{
    if (small_arenas)
        *small_arenas = fm5_small_arena_count;
    if (medium_arenas)
        *medium_arenas = fm5_medium_arena_count;
    if (large_arenas)
        *large_arenas = fm5_large_arena_count;
}

/* ---- adaptive small-block arena affinity (blocks/arena_affinity.h) ----------------------------- */

int FM5_CALL FastMM_SetAdaptiveSmallBlockArenaAffinity(int enabled)
{
    return fm5_affinity_set_enabled(enabled);
}

int FM5_CALL FastMM_GetAdaptiveSmallBlockArenaAffinity(void)
{
    return fm5_affinity_enabled;
}

/* ---- thread caches (blocks/thread_cache.h) ----------------------------------------------------- */

int FM5_CALL FastMM_SetThreadCaches(int enabled)
{
    return fm5_thread_cache_set_enabled(enabled);
}

int FM5_CALL FastMM_GetThreadCaches(void)
{
    return fm5_thread_cache_enabled();
}

size_t FM5_CALL FastMM_GetThreadCacheBytes(unsigned *caches)
{
    return fm5_thread_cache_bytes(caches);
}
