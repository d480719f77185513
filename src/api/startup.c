/* Set-up at load (managers, processor features, environment settings) and the leak report at unload. */
#include "api/startup.h"
#include "api/sharing.h"
#include "fm5.h"
#include "base/os.h"
#include "base/memory_usage.h"
#include "blocks/geometry.h"
#include "blocks/small_block_classes.h"
#include "blocks/small_blocks.h"
#include "blocks/thread_cache.h"
#include "blocks/medium_blocks.h"
#include "blocks/large_blocks.h"
#include "debug/debug_blocks.h"
#include "debug/stack_unwind.h"
#include "reports/leak_report.h"
#ifdef FM5_WINDOWS
#include <windows.h>
#endif

static volatile int32_t initialized;

/* Returns 1 and the value when the variable is set to a decimal number. */
static int read_number(const char *name, unsigned *value)
{
    char text[16];
    size_t length = fm5_os_environment(name, text, sizeof text);
    if (length == 0)
        return 0;
    unsigned result = 0;
    for (size_t i = 0; i < length; i++) {
        if (text[i] < '0' || text[i] > '9' || result > 100000000u)
            return 0;
        result = result * 10 + (unsigned)(text[i] - '0');
    }
    *value = result;
    return 1;
}

static void apply_environment_settings(void)
{
    unsigned value;
    /* First: before anything below could allocate. A count out of range reports its event. */
    unsigned arenas[3] = { 0, 0, 0 };
    int any = read_number("FM5_SMALL_ARENAS", &arenas[0]);
    any |= read_number("FM5_MEDIUM_ARENAS", &arenas[1]);
    any |= read_number("FM5_LARGE_ARENAS", &arenas[2]);
    if (any)
        FastMM_SetArenaCounts(arenas[0], arenas[1], arenas[2]);
    if (read_number("FM5_THREAD_CACHES", &value))
        FastMM_SetThreadCaches(value != 0);
    if (read_number("FM5_ARENA_AFFINITY", &value))
        FastMM_SetAdaptiveSmallBlockArenaAffinity(value != 0);
    if (read_number("FM5_STACK_DEPTH", &value))
        FastMM_SetDebugModeStackTraceEntryCount(value);
    char path[1024];
    if (fm5_os_environment("FM5_LOG", path, sizeof path))
        FastMM_SetEventLogFilename(path);
    if (read_number("FM5_DEBUG", &value) && value) {
        FastMM_EnterDebugMode();
        FastMM_SetReportMemoryLeaksOnShutdown(1);
    }
    if (read_number("FM5_LEAK_REPORT", &value))
        FastMM_SetReportMemoryLeaksOnShutdown(value != 0);
#if defined(FM5_WINDOWS) && !defined(FM5_STATIC)
    /* Malloc redirection from the start (fm5.h): in DllMain, under the loader lock, which it takes
     * anyway; it only reads loaded images, rewrites import slots and registers a load notification. */
    if (read_number("FM5_REDIRECT", &value) && value)
        fm5_redirect_crt();
#endif
}

void fm5_initialize(void)
{
    if (__atomic_exchange_n(&initialized, 1, __ATOMIC_ACQ_REL))
        return;
    fm5_os_detect_processor();
    fm5_os_install_release_guard();
    fm5_memory_initialize();
    fm5_small_lookup_rebuild(FM5_DEFAULT_MINIMUM_ALIGNMENT);
    fm5_small_initialize();
    fm5_thread_cache_initialize();
    fm5_medium_initialize();
    fm5_large_initialize();
    fm5_debug_initialize();
    apply_environment_settings();
}

void fm5_shut_down(void)
{
#ifdef FM5_WINDOWS
    fm5_stop_sharing();
#endif
#if defined(FM5_WINDOWS) && defined(FM5_64BIT)
    fm5_unwind_shut_down();
#endif
    fm5_report_leaks_at_shutdown();
    fm5_thread_cache_shut_down();
    fm5_os_remove_release_guard();
}

#if defined(FM5_WINDOWS) && !defined(FM5_STATIC)
BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reserved;
    if (reason == DLL_PROCESS_ATTACH)
        fm5_initialize();
    else if (reason == DLL_PROCESS_DETACH)
        fm5_shut_down();
    return TRUE;
}
#endif
#if defined(FM5_POSIX) && !defined(FM5_STATIC)
/* The shared object's load and unload, as DllMain's process attach and detach. */
__attribute__((constructor)) static void fm5_load(void)
{
    fm5_initialize();
}

__attribute__((destructor)) static void fm5_unload(void)
{
    fm5_shut_down();
}
#endif
