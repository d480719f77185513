/* What the processor offers beyond the architecture's baseline, detected once at start-up for the NASM
 * routines that have a faster path (x64 always has SSE2; a Win32 process may run where it does not). */
#ifndef FM5_CPU_FEATURES_H
#define FM5_CPU_FEATURES_H

#include "platform.h"

/* 1 when SSE2 may be used. Read by asm/: a byte, so that the test is one compare with memory. */
extern uint8_t fm5_cpu_has_sse2;

void fm5_detect_cpu_features(void);

#endif
