/* Entering and leaving debug mode, and its settings. */
#include "fm5.h"
#include "debug/debug_mode.h"
#include "blocks/recycling.h"
#include "blocks/release_engine.h"
#include "blocks/thread_cache.h"
#include "base/events.h"
#include "base/os.h"

#define KNOWN_OPTIONS                                                                                 \
    (FastMM_DebugNeverFreeSmallBlockSpans | FastMM_DebugNeverMergeFreeMediumBlocks | FastMM_DebugNoFillPatterns | \
     FastMM_DebugNoChecksums)

volatile int fm5_debug_mode_active;
volatile unsigned fm5_debug_stack_trace_depth = FM5_DEFAULT_STACK_TRACE_DEPTH;
volatile unsigned fm5_debug_allocation_group;
volatile uint32_t fm5_debug_last_allocation_number;
volatile uint32_t fm5_debug_break_allocation_number;

static volatile long debug_mode_counter;
static volatile unsigned debug_mode_options =
    FastMM_DebugNeverFreeSmallBlockSpans | FastMM_DebugNeverMergeFreeMediumBlocks;

unsigned fm5_debug_options(void)
{
    return debug_mode_options;
}

/* The release managers keep freed blocks in place only while debug mode is active, as FastMM5 does. */
static void publish_state(void)
{
    int active = debug_mode_counter > 0;
    unsigned recycling = 0;
    if (active && (debug_mode_options & FastMM_DebugNeverFreeSmallBlockSpans))
        recycling |= FM5_RECYCLING_KEEP_EMPTY_SMALL_SPANS;
    if (active && (debug_mode_options & FastMM_DebugNeverMergeFreeMediumBlocks))
        recycling |= FM5_RECYCLING_NEVER_MERGE_MEDIUM_BLOCKS;
    if (active)
        recycling |= FM5_RECYCLING_NO_LARGE_REGION_CACHE | FM5_RECYCLING_KEEP_FREED_DEBUG_BLOCKS;
    __atomic_store_n(&fm5_recycling_options, recycling, __ATOMIC_RELAXED);
    __atomic_store_n(&fm5_debug_mode_active, active, __ATOMIC_RELAXED);
}

static fm5_lock mode_lock;

/* On Win32 a pointer read from a fill pattern is 0x80808080 or 0x90909090, which could be mapped
 * memory. Reserving the 64 KB around both without access (as FastMM5 does) makes a use of such a
 * pointer fault instead of reading something. Win64 patterns are never user addresses. */
static void reserve_fill_pattern_addresses(void)
{
#ifdef FM5_32BIT
    static int reserved;
    if (reserved)
        return;
    reserved = 1;
    fm5_os_reserve_inaccessible((void *)(uintptr_t)0x80800000u, FM5_OS_GRANULARITY);
    fm5_os_reserve_inaccessible((void *)(uintptr_t)0x90900000u, FM5_OS_GRANULARITY);
#endif
}

/* How long the end of debug mode waits for each arena's lock, as the scans do. */
#define RECYCLE_LOCK_TIMEOUT_MS 1000u

static int adjust_counter(long delta)
{
    fm5_lock_with_timeout(&mode_lock, FM5_WAIT_FOREVER);
    if (delta > 0)
        reserve_fill_pattern_addresses();
    int was_active = fm5_debug_mode_active;
    debug_mode_counter += delta;
    publish_state();
    int active = fm5_debug_mode_active;
    /* Under the mode lock, so that the caches' switch follows the mode's order of changes. */
    if (active != was_active)
        fm5_thread_cache_hold(FM5_CACHE_OFF_IN_DEBUG_MODE, active);
    fm5_unlock(&mode_lock);
    /* Cached blocks would bypass the freed-block checks: the caller's go back now, the others' at
     * their owners' next call. */
    if (active && !was_active)
        fm5_thread_cache_flush_current();
    /* Without the mode lock, which is held over no other lock: the blocks debug mode kept in place
     * would otherwise stay there for good, since no free touches them again. */
    if (was_active && !active)
        fm5_release_recycle_freed_debug_blocks(RECYCLE_LOCK_TIMEOUT_MS);
    return active;
}

int FM5_CALL FastMM_EnterDebugMode(void)
{
    return adjust_counter(1);
}

int FM5_CALL FastMM_ExitDebugMode(void)
{
    return adjust_counter(-1);
}

int FM5_CALL FastMM_DebugModeActive(void)
{
    return fm5_debug_mode_is_active();
}

int FM5_CALL FastMM_SetDebugModeOptions(unsigned options)
{
    if (options & ~(unsigned)KNOWN_OPTIONS) {
        fm5_event_report(FastMM_EventInvalidArgument, NULL, options, "FastMM_SetDebugModeOptions: unknown option bits");
        return -1;
    }
    fm5_lock_with_timeout(&mode_lock, FM5_WAIT_FOREVER);
    debug_mode_options = options;
    publish_state();
    fm5_unlock(&mode_lock);
    return 0;
}

unsigned FM5_CALL FastMM_GetDebugModeOptions(void)
{
    return debug_mode_options;
}

int FM5_CALL FastMM_SetDebugModeStackTraceEntryCount(unsigned count)
{
    if (count > 64) {
        fm5_event_report(FastMM_EventInvalidArgument, NULL, count, "the stack trace depth must be 0 to 64");
        return -1;
    }
    fm5_debug_stack_trace_depth = count;
    return 0;
}

unsigned FM5_CALL FastMM_GetDebugModeStackTraceEntryCount(void)
{
    return fm5_debug_stack_trace_depth;
}

unsigned FM5_CALL FastMM_GetLastAllocationNumber(void)
{
    return fm5_debug_last_allocation_number;
}

void FM5_CALL FastMM_SetBreakOnAllocationNumber(unsigned number)
{
    fm5_debug_break_allocation_number = number;
}

void FM5_CALL FastMM_SetCurrentAllocationGroup(unsigned group)
{
    fm5_debug_allocation_group = group;
}

unsigned FM5_CALL FastMM_GetCurrentAllocationGroup(void)
{
    return fm5_debug_allocation_group;
}
