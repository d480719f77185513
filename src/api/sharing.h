/* Memory-manager sharing by FastMM5's protocol: one module of a process publishes its manager (a
 * TMemoryManagerEx, api/delphi_interface.h) through a file mapping named Local\FastMM_PID_XXXXXXXX (the
 * process id in eight upper-case hex digits) that holds one pointer to the record; other modules find
 * it there and allocate through it. fm5 takes both parts: FastMM_ShareMemoryManager publishes
 * fm5_delphi_manager, and FastMM_AttemptToUseSharedMemoryManager makes fm5 forward to another
 * module's record (a FastMM5-based host, say). The mapping is api/sharing_windows.c's; this is the
 * portable part, the forwarding.
 *
 * Forwarding is one-way and for good: fm5 switches only while it holds no live block (so every block
 * the program frees after the switch is the other manager's), and from then on FastMM_GetMem and
 * FastMM_AllocMem allocate through the record (their fast paths test fm5_using_shared_manager with the
 * debug and erase flags, at no extra branch), while FreeMem and ReallocMem reach the record from the
 * path that would otherwise report a pointer that is not fm5's. */
#ifndef FM5_SHARING_H
#define FM5_SHARING_H

#include "api/delphi_interface.h"
#include "base/platform.h"

/* 1 once fm5 forwards to another module's manager. Read by the NASM GetMem (4 bytes). */
extern volatile int fm5_using_shared_manager;

/* Starts forwarding to `manager`, whose entries stay valid while the process runs (the other module
 * keeps its record alive as long as it shares). */
void fm5_start_using_shared_manager(const fm5_delphi_memory_manager *manager);

void *fm5_shared_get_mem(size_t size);
void *fm5_shared_alloc_mem(size_t size);
int fm5_shared_free_mem(void *p);
void *fm5_shared_realloc_mem(void *p, size_t size);

#ifdef FM5_WINDOWS
/* Closes the mapping when fm5 shares, so that no module finds fm5 after it unloads (DllMain). */
void fm5_stop_sharing(void);
#endif

#endif
