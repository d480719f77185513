/* A module that follows FastMM5's sharing protocol with a manager of its own (a counted wrapper of a
 * private Windows heap), for test_sharing: it can publish its manager under Local\FastMM_PID_XXXXXXXX,
 * as a FastMM5-based host would, or find the published one and allocate through it, as a FastMM5-based
 * DLL would. Written from the protocol, with nothing of fm5's. */
#include <windows.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __declspec(dllexport)

/* TMemoryManagerEx: six entries in Delphi's default convention (register on Win32). */
typedef struct { void *get_mem, *free_mem, *realloc_mem, *alloc_mem, *register_leak, *unregister_leak; } manager;

static HANDLE heap, mapping;
static volatile LONG calls[6];
static const manager *found;

/* ---- The module's own manager -------------------------------------------------------------------- */
void *toy_get_mem(size_t size);
int toy_free_mem(void *p);
void *toy_realloc_mem(void *p, size_t size);
void *toy_alloc_mem(size_t size);
int toy_register_leak(void *p);
int toy_unregister_leak(void *p);

void *toy_get_mem(size_t size)
{
    InterlockedIncrement(&calls[0]);
    return HeapAlloc(heap, 0, size ? size : 1);
}
int toy_free_mem(void *p)
{
    InterlockedIncrement(&calls[1]);
    return HeapFree(heap, 0, p) ? 0 : -1;
}
void *toy_realloc_mem(void *p, size_t size)
{
    InterlockedIncrement(&calls[2]);
    return HeapReAlloc(heap, 0, p, size ? size : 1);
}
void *toy_alloc_mem(size_t size)
{
    InterlockedIncrement(&calls[3]);
    return HeapAlloc(heap, HEAP_ZERO_MEMORY, size ? size : 1);
}
int toy_register_leak(void *p)
{
    (void)p;
    InterlockedIncrement(&calls[4]);
    return 1;
}
int toy_unregister_leak(void *p)
{
    (void)p;
    InterlockedIncrement(&calls[5]);
    return 1;
}

#ifdef _WIN64
static const manager toy = {(void *)toy_get_mem, (void *)toy_free_mem, (void *)toy_realloc_mem,
                            (void *)toy_alloc_mem, (void *)toy_register_leak, (void *)toy_unregister_leak};
#else
/* The register-convention entries in front of the toy functions (protocol_module_32.asm). */
extern char toy_register_get_mem[], toy_register_free_mem[], toy_register_realloc_mem[], toy_register_alloc_mem[],
    toy_register_register_leak[], toy_register_unregister_leak[];
static const manager toy = {toy_register_get_mem, toy_register_free_mem, toy_register_realloc_mem,
                            toy_register_alloc_mem, toy_register_register_leak, toy_register_unregister_leak};
size_t register_call(const void *code, const size_t *arguments, unsigned count);
#endif

static void name_of_mapping(char *name)
{
    wsprintfA(name, "Local\\FastMM_PID_%08X", (unsigned)GetCurrentProcessId());
}

/* The protocol's look-up: the pointer held by the mapping, or NULL. */
static const manager *find(void)
{
    char name[64];
    name_of_mapping(name);
    HANDLE m = OpenFileMappingA(FILE_MAP_READ, FALSE, name);
    if (!m)
        return NULL;
    const manager *result = NULL;
    void **view = MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0);
    if (view) {
        result = *view;
        UnmapViewOfFile(view);
    }
    CloseHandle(m);
    return result;
}

/* Publishes the toy manager unless another module shares already: 1 when it does. */
EXPORT int protocol_share(void)
{
    if (find())
        return 0;
    char name[64];
    name_of_mapping(name);
    mapping = CreateFileMappingA(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE, 0, sizeof(void *), name);
    if (!mapping || GetLastError() == ERROR_ALREADY_EXISTS)
        return 0;
    void **view = MapViewOfFile(mapping, FILE_MAP_WRITE, 0, 0, 0);
    *view = (void *)&toy;
    UnmapViewOfFile(view);
    return 1;
}

/* Finds the shared manager, as a FastMM5-based DLL's AttemptToUseSharedMemoryManager does. */
EXPORT const void *protocol_use(void)
{
    found = find();
    return found;
}

/* Calls through the found manager, with its convention. */
static size_t call(const void *code, size_t a, size_t b, unsigned count)
{
#ifdef _WIN64
    return count == 1 ? ((size_t (*)(size_t))code)(a) : ((size_t (*)(size_t, size_t))code)(a, b);
#else
    size_t arguments[3] = {a, b, 0};
    return register_call(code, arguments, count);
#endif
}
EXPORT void *protocol_get_mem(size_t size) { return (void *)call(found->get_mem, size, 0, 1); }
EXPORT int protocol_free_mem(void *p) { return (int)call(found->free_mem, (size_t)p, 0, 1); }
EXPORT void *protocol_realloc_mem(void *p, size_t size) { return (void *)call(found->realloc_mem, (size_t)p, size, 2); }
EXPORT void *protocol_alloc_mem(size_t size) { return (void *)call(found->alloc_mem, size, 0, 1); }
EXPORT int protocol_register_leak(void *p) { return (uint8_t)call(found->register_leak, (size_t)p, 0, 1); }
EXPORT int protocol_unregister_leak(void *p) { return (uint8_t)call(found->unregister_leak, (size_t)p, 0, 1); }

/* How often each toy entry was called: get, free, realloc, alloc, register, unregister. */
EXPORT LONG protocol_toy_calls(int entry) { return calls[entry]; }
/* Whether the toy heap owns p. */
EXPORT int protocol_toy_owns(void *p) { return HeapSize(heap, 0, p) != (SIZE_T)-1; }

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reserved;
    if (reason == DLL_PROCESS_ATTACH)
        heap = HeapCreate(0, 0, 0);
    return TRUE;
}
