/*
 * test_sharing — memory-manager sharing by FastMM5's protocol, both directions, against
 * protocol_module.dll (a module that follows the protocol with a manager of its own):
 *   test_sharing serve   fm5 shares (FastMM_ShareMemoryManager); the module finds fm5's record and
 *                        allocates, reallocates, zero-allocates, frees and registers leaks through it
 *                        in Delphi's convention; blocks cross between the module and the program both
 *                        ways; the module cannot share any more, nor can fm5 share twice.
 *   test_sharing use     the module shares first; fm5 refuses to switch while it holds a live block
 *                        (with its event), then switches (FastMM_AttemptToUseSharedMemoryManager), and
 *                        from then on FastMM_GetMem, AllocMem, ReallocMem, FreeMem and the fm5_* family
 *                        go to the module's manager; fm5 cannot share then.
 * Each mode runs in a process of its own: the mapping's name is the process's. Exits with the number
 * of failed checks.
 */
#include <windows.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "fm5.h"

#include "support/standalone_check.h"

static int events[32];
static void FM5_CALL count_event(const FastMM_Event *event, void *user)
{
    (void)user;
    if (event->Kind >= 0 && event->Kind < 32)
        events[event->Kind]++;
}

static struct {
    int (*share)(void);
    const void *(*use)(void);
    void *(*get_mem)(size_t);
    int (*free_mem)(void *);
    void *(*realloc_mem)(void *, size_t);
    void *(*alloc_mem)(size_t);
    int (*register_leak)(void *);
    int (*unregister_leak)(void *);
    LONG (*toy_calls)(int);
    int (*toy_owns)(void *);
} module;

static int load_module(void)
{
    HMODULE dll = LoadLibraryA("protocol_module.dll");
    if (!CHECK(dll != NULL, "protocol_module.dll does not load"))
        return 0;
#define BIND(field, name) *(FARPROC *)&module.field = GetProcAddress(dll, name)
    BIND(share, "protocol_share");
    BIND(use, "protocol_use");
    BIND(get_mem, "protocol_get_mem");
    BIND(free_mem, "protocol_free_mem");
    BIND(realloc_mem, "protocol_realloc_mem");
    BIND(alloc_mem, "protocol_alloc_mem");
    BIND(register_leak, "protocol_register_leak");
    BIND(unregister_leak, "protocol_unregister_leak");
    BIND(toy_calls, "protocol_toy_calls");
    BIND(toy_owns, "protocol_toy_owns");
    return CHECK(module.share && module.toy_owns, "protocol_module.dll lacks an export");
}


static const size_t sizes[] = {1, 24, 700, 2500, 9000, 200000, 700000, 2 << 20};
#define SIZE_COUNT (sizeof sizes / sizeof sizes[0])

static void serve(void)
{
    CHECK(FastMM_ShareMemoryManager() == 1, "fm5 could not share");
    CHECK(FastMM_ShareMemoryManager() == 0, "fm5 shared twice");
    CHECK(FastMM_AttemptToUseSharedMemoryManager() == 1, "fm5, the shared manager, must answer 1 and stay");
    if (!load_module())
        return;
    CHECK(module.use() != NULL, "the module did not find fm5's record");
    CHECK(module.share() == 0, "the module shared although fm5 does");
    size_t before = FastMM_GetCurrentMemoryUsage();
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        unsigned char *p = module.get_mem(sizes[i]);
        if (!CHECK(p != NULL && fm5_owns(p), "GetMem(%zu) through the record did not give an fm5 block", sizes[i]))
            continue;
        standalone_fill(p, sizes[i], (unsigned)i);
        unsigned char *q = module.realloc_mem(p, sizes[i] * 2 + 10);
        if (CHECK(q != NULL && fm5_owns(q), "ReallocMem up from %zu", sizes[i])) {
            CHECK(standalone_intact(q, sizes[i], (unsigned)i), "ReallocMem from %zu lost content", sizes[i]);
            p = q;
        }
        CHECK(module.free_mem(p) == 0, "FreeMem through the record of a %zu-byte block", sizes[i]);

        unsigned char *z = module.alloc_mem(sizes[i]);
        if (CHECK(z != NULL && fm5_owns(z), "AllocMem(%zu) through the record", sizes[i])) {
            size_t nonzero = 0;
            for (size_t j = 0; j < sizes[i]; j++)
                nonzero += z[j] != 0;
            CHECK(nonzero == 0, "AllocMem(%zu) left %zu bytes not zero", sizes[i], nonzero);
            /* A block the module allocated, freed by the program, and the other way round. */
            fm5_free(z);
        }
        unsigned char *mine = fm5_malloc(sizes[i]);
        CHECK(mine && module.free_mem(mine) == 0, "the module could not free the program's %zu-byte block", sizes[i]);
    }
    void *leak = module.get_mem(64);
    CHECK(module.register_leak(leak) == 1, "RegisterExpectedMemoryLeak through the record answers True");
    CHECK(module.unregister_leak(leak) == 1, "UnregisterExpectedMemoryLeak through the record answers True");
    CHECK(module.unregister_leak(leak) == 0, "a second unregistration answers False");
    module.free_mem(leak);
    CHECK(module.free_mem(&failures) == -1, "FreeMem of a static through the record must answer -1");
    CHECK(FastMM_ProcessAllPendingFrees() == 1, "pending frees");
    CHECK(FastMM_GetCurrentMemoryUsage() <= before + (8u << 20), "usage grew from %zu to %zu", before,
          FastMM_GetCurrentMemoryUsage());
}

static void use(void)
{
    if (!load_module())
        return;
    CHECK(FastMM_AttemptToUseSharedMemoryManager() == 0, "fm5 switched although no module shares");
    CHECK(module.share() == 1, "the module could not share");

    void *live = FastMM_GetMem(100);
    CHECK(fm5_owns(live), "before the switch fm5 allocates itself");
    CHECK(FastMM_AttemptToUseSharedMemoryManager() == 0, "fm5 switched with a live block");
    CHECK(events[FastMM_EventCannotSwitchWithLivePointers] == 1, "%d CannotSwitchWithLivePointers events",
          events[FastMM_EventCannotSwitchWithLivePointers]);
    CHECK(FastMM_FreeMem(live) == 0, "freeing fm5's block");
    CHECK(FastMM_ProcessAllPendingFrees() == 1, "pending frees");
    /* Free blocks in this thread's cache, which do not stop the switch: no GetMem after it may take
     * them (the switch holds the caches off). */
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        void *cached[4];
        for (size_t k = 0; k < 4; k++)
            cached[k] = FastMM_GetMem(sizes[i]);
        for (size_t k = 0; k < 4; k++)
            CHECK(FastMM_FreeMem(cached[k]) == 0, "freeing fm5's %zu-byte block", sizes[i]);
    }
    CHECK(FastMM_AttemptToUseSharedMemoryManager() == 1, "fm5 did not switch to the module's manager");
    CHECK(FastMM_AttemptToUseSharedMemoryManager() == 1, "a second attempt after the switch answers 1");
    CHECK(FastMM_ShareMemoryManager() == 0, "fm5 shared while it uses another module's manager");

    LONG gets = module.toy_calls(0), frees = module.toy_calls(1), reallocs = module.toy_calls(2),
         allocs = module.toy_calls(3);
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        unsigned char *p = FastMM_GetMem(sizes[i]);
        if (!CHECK(p && !fm5_owns(p) && module.toy_owns(p), "FastMM_GetMem(%zu) was not the module's", sizes[i]))
            continue;
        standalone_fill(p, sizes[i], (unsigned)i + 7);
        unsigned char *q = FastMM_ReallocMem(p, sizes[i] + 5000);
        if (CHECK(q && module.toy_owns(q), "FastMM_ReallocMem from %zu was not the module's", sizes[i])) {
            CHECK(standalone_intact(q, sizes[i], (unsigned)i + 7), "FastMM_ReallocMem from %zu lost content", sizes[i]);
            p = q;
        }
        CHECK(FastMM_FreeMem(p) == 0, "FastMM_FreeMem of the module's %zu-byte block", sizes[i]);
        unsigned char *z = FastMM_AllocMem(sizes[i]);
        CHECK(z && module.toy_owns(z) && z[0] == 0 && z[sizes[i] - 1] == 0, "FastMM_AllocMem(%zu)", sizes[i]);
        unsigned char *c = fm5_malloc(sizes[i]);
        CHECK(c && module.toy_owns(c), "fm5_malloc(%zu) was not the module's", sizes[i]);
        fm5_free(c);
        /* A block of the module's, freed through fm5. */
        fm5_free(z);
    }
    LONG n = (LONG)SIZE_COUNT;
    CHECK(module.toy_calls(0) - gets == 2 * n, "%ld GetMem calls reached the module, not %ld",
          module.toy_calls(0) - gets, 2 * n);
    CHECK(module.toy_calls(1) - frees == 3 * n, "%ld FreeMem calls reached the module, not %ld",
          module.toy_calls(1) - frees, 3 * n);
    CHECK(module.toy_calls(2) - reallocs == n, "%ld ReallocMem calls reached the module", module.toy_calls(2) - reallocs);
    CHECK(module.toy_calls(3) - allocs == n, "%ld AllocMem calls reached the module", module.toy_calls(3) - allocs);
    CHECK(events[FastMM_EventInvalidFree] == 0 && events[FastMM_EventInvalidRealloc] == 0,
          "fm5 reported the module's blocks as invalid");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    FastMM_SetEventCallback(count_event, NULL);
    FastMM_SetLogToFileEvents(0);
    FastMM_SetOutputDebugStringEvents(0);
    if (argc == 2 && strcmp(argv[1], "serve") == 0)
        serve();
    else if (argc == 2 && strcmp(argv[1], "use") == 0)
        use();
    else {
        printf("usage: test_sharing serve|use\n");
        return 2;
    }
    printf("test_sharing %s: %d failed\n", argv[1], failures);
    return failures;
}
