/* Debug mode's switch and settings. The release paths test one flag to divert into debug mode. */
#ifndef FM5_DEBUG_MODE_H
#define FM5_DEBUG_MODE_H

#include "base/platform.h"

#define FM5_DEFAULT_STACK_TRACE_DEPTH 20u

extern volatile int fm5_debug_mode_active;
extern volatile unsigned fm5_debug_stack_trace_depth;
extern volatile unsigned fm5_debug_allocation_group;
extern volatile uint32_t fm5_debug_last_allocation_number;
extern volatile uint32_t fm5_debug_break_allocation_number;

/* Written by FastMM_Enter/ExitDebugMode on one thread while every GetMem reads it on others: whole
 * loads (a relaxed atomic, the plain move asm/ makes too). */
FM5_INLINE int fm5_debug_mode_is_active(void)
{
    return __atomic_load_n(&fm5_debug_mode_active, __ATOMIC_RELAXED);
}

/* The FastMM_DebugModeOption bits in force for debug operations. */
unsigned fm5_debug_options(void);

#endif
