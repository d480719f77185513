#include "initialization.h"
#include "platform.h"
#include "size_limits.h"
#include "small_block_classes.h"
#include "small_blocks.h"
#include "medium_blocks.h"
#include "large_blocks.h"
#include "os_memory.h"
#include "environment_settings.h"
#include "leak_report.h"
#include "cpu_features.h"

static volatile int32_t initialized;

void fm5_initialize(void)
{
    if (__atomic_exchange_n(&initialized, 1, __ATOMIC_ACQ_REL))
        return;
    fm5_detect_cpu_features();
    fm5_os_initialize();
    fm5_small_lookup_rebuild(FM5_DEFAULT_MINIMUM_ALIGNMENT);
    fm5_small_initialize();
    fm5_medium_initialize();
    fm5_large_initialize();
    fm5_apply_environment_settings();
}

#ifndef FM5_STATIC
BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reserved;
    if (reason == DLL_PROCESS_ATTACH)
        fm5_initialize();
    else if (reason == DLL_PROCESS_DETACH)
        fm5_report_leaks_at_shutdown();
    return TRUE;
}
#endif
