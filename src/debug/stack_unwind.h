/* Win64 stack traces without the system unwinder on every frame. RtlCaptureStackBackTrace looks up
 * and interprets each frame's unwind data every time (about 3 us for 20 frames under Wine); but what a
 * function's prologue did to RSP, and where it saved RBP, depends only on the return address, so fm5
 * works it out once per return address from the same unwind data and keeps it in a lock-free cache.
 * The cache is emptied when a module unloads (LdrRegisterDllNotification), since another module may
 * then load at the same addresses. Frames whose unwind data fm5 does not follow (a frame register
 * other than RBP, a machine frame) make the whole trace fall back to the system unwinder, so a trace
 * is always the system's. A walk from a trace's first frame is also remembered and replayed with
 * independent loads when the same return addresses are found at the same places again. */
#ifndef FM5_STACK_UNWIND_H
#define FM5_STACK_UNWIND_H

#include "base/platform.h"

#if defined(FM5_64BIT) && defined(FM5_WINDOWS)
/* Fills frames[0..count) with return addresses, the one into the caller first, after skipping `skip`
 * of them: what RtlCaptureStackBackTrace(skip, count, frames, NULL) gives when the caller calls it
 * instead. When [own_start, own_end) is not empty (fm5's module), the leading frames inside it are
 * left out before `skip` applies; the runs of them are learned, so that later walks skip them in one
 * check. Returns how many it found, or -1 when a frame needs the system unwinder. */
int fm5_unwind_stack(void **frames, unsigned count, unsigned skip, uintptr_t own_start, uintptr_t own_end);

/* Statistics for tests: cache hits and misses since start-up, walks replayed from memory, and whether
 * module unloads empty the cache (0 when the loader offers no notifications; the cache and the memory
 * of walks are then not used). Hits and replays are approximate under concurrent traces. */
void fm5_unwind_statistics(size_t *hits, size_t *misses, size_t *replays, int *unload_notifications);

/* Unregisters the module-unload notification: the loader would otherwise call into fm5's code after
 * a DLL that holds fm5 (BorlndMM.dll, say) was unloaded. From the DLL's process detach. */
void fm5_unwind_shut_down(void);
#endif

#endif
