/* Memory-manager sharing: the file mapping of FastMM5's protocol (api/sharing.h). */
#include "api/sharing.h"
#include "base/events.h"
#include "base/platform.h"
#include <windows.h>

/* The mapping this module created to share fm5: open for as long as fm5 is shared. */
static HANDLE sharing_mapping;
static fm5_lock sharing_lock;

/* "Local\FastMM_PID_" and the process id in eight upper-case hex digits, as FastMM5 names it. */
static void mapping_name(char name[32])
{
    static const char prefix[] = "Local\\FastMM_PID_";
    static const char digits[] = "0123456789ABCDEF";
    DWORD pid = GetCurrentProcessId();
    size_t n = sizeof prefix - 1;
    for (size_t i = 0; i < n; i++)
        name[i] = prefix[i];
    for (int i = 0; i < 8; i++)
        name[n + i] = digits[(pid >> (28 - 4 * i)) & 15];
    name[n + 8] = 0;
}

/* The record some module of this process shares, or NULL. */
static const fm5_delphi_memory_manager *find_shared_manager(void)
{
    char name[32];
    mapping_name(name);
    HANDLE mapping = OpenFileMappingA(FILE_MAP_READ, FALSE, name);
    if (!mapping)
        return NULL;
    const fm5_delphi_memory_manager *manager = NULL;
    void *const *view = MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, sizeof(void *));
    if (view) {
        manager = *view;
        UnmapViewOfFile((void *)view);
    }
    CloseHandle(mapping);
    return manager;
}

static void lock_sharing(void)
{
    while (!fm5_try_lock(&sharing_lock))
        SwitchToThread();
}

static void unlock_sharing(void)
{
    fm5_unlock(&sharing_lock);
}

int FM5_CALL FastMM_ShareMemoryManager(void)
{
    int shared = 0;
    lock_sharing();
    if (!sharing_mapping && !fm5_using_shared_manager && !find_shared_manager()) {
        char name[32];
        mapping_name(name);
        HANDLE mapping = CreateFileMappingA(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE, 0, sizeof(void *), name);
        /* Another module may have created it between the look and now: then it shares, not fm5. */
        if (mapping && GetLastError() != ERROR_ALREADY_EXISTS) {
            const fm5_delphi_memory_manager **view = MapViewOfFile(mapping, FILE_MAP_WRITE, 0, 0, sizeof(void *));
            if (view) {
                *view = &fm5_delphi_manager;
                UnmapViewOfFile(view);
                sharing_mapping = mapping;
                shared = 1;
            }
        }
        if (!shared && mapping)
            CloseHandle(mapping);
    }
    unlock_sharing();
    return shared;
}

static int FM5_CALL count_live_block(const FastMM_WalkBlockInfo *info, void *user)
{
    (void)info;
    ++*(size_t *)user;
    return 1; /* one is enough */
}

int FM5_CALL FastMM_AttemptToUseSharedMemoryManager(void)
{
    int result = 0;
    lock_sharing();
    if (sharing_mapping || fm5_using_shared_manager) {
        /* fm5 is the shared manager, or already uses it: nothing to switch, as FastMM5 answers. */
        result = 1;
    } else {
        const fm5_delphi_memory_manager *manager = find_shared_manager();
        if (manager && manager != &fm5_delphi_manager) {
            size_t live = 0;
            int walked = FastMM_WalkBlocks(count_live_block, &live,
                                           FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock, 1, 1000);
            if (live || !walked)
                fm5_event_report(FastMM_EventCannotSwitchWithLivePointers, NULL, 0,
                                 live ? "fm5 holds live blocks: it cannot switch to the shared memory manager"
                                      : "fm5 could not walk every arena to prove it holds no live block");
            else {
                fm5_start_using_shared_manager(manager);
                result = 1;
            }
        }
    }
    unlock_sharing();
    return result;
}

void fm5_stop_sharing(void)
{
    lock_sharing();
    if (sharing_mapping) {
        CloseHandle(sharing_mapping);
        sharing_mapping = NULL;
    }
    unlock_sharing();
}
