/* Capturing return-address stack traces and writing them as module+offset (and symbol names where
 * DbgHelp can resolve them), for debug-mode reports. */
#ifndef FM5_STACK_TRACE_H
#define FM5_STACK_TRACE_H

#include "base/platform.h"
#include "base/text_builder.h"

#define FM5_MAXIMUM_STACK_TRACE_DEPTH 64u

/* Fills frames[0..count) with the return addresses of the program's calls that led here: frames inside
 * fm5's own module are left out, and `skip` more frames above the caller. Unused entries are zeroed.
 * Returns the number captured. Cheap: no allocation, no lock. */
unsigned fm5_capture_stack_trace(void **frames, unsigned count, unsigned skip);

/* One line per non-zero frame: "    module.dll+0x1A2B  [symbol+0x10]". May load dbghelp.dll the first
 * time unless `may_load_dbghelp` is 0 (for example during DLL unload, under the loader lock). */
void fm5_append_stack_trace(fm5_text *text, void *const *frames, unsigned count, int may_load_dbghelp);

#endif
