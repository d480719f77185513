/* The allocator under test, chosen by --allocator:
 *   fm5                     fm5_32.dll / fm5_64.dll from the executable's folder
 *   fm5:<dll path>          a specific fm5 build
 *   fm5-affinity, fm5-affinity:<dll path>   the same with adaptive small-block arena affinity switched
 *                           on before the workload (FastMM_SetAdaptiveSmallBlockArenaAffinity)
 *   fm5-nocache, fm5-nocache:<dll path>     the same with the thread caches switched off before the
 *                           workload (FastMM_SetThreadCaches(0))
 *   heap                    HeapAlloc / HeapFree / HeapReAlloc on GetProcessHeap()
 *   msvcrt, ucrtbase        malloc / free / realloc (and calloc) of that DLL
 *   <dll path>:<alloc>:<free>:<realloc>   cdecl exports of any DLL (split at the last three colons)
 *   debugdll:<dll path>:<alloc>:<free>:<realloc>   the same for a DLL that is always in a debug mode with
 *                           20-frame stack traces (FastMM5's debug build): it runs the debug workloads
 *                           at depth 20, and refuses the others
 *   headerread:<spec>       <spec>'s allocator, with a load of the two bytes before the block at every
 *                           free and realloc, which the call's pointer then depends on: FastMM5's layout
 *                           (fm5's too) makes every free and realloc wait for the status word kept
 *                           there, in a line the program may not have touched for long, where mimalloc
 *                           finds its page from the address alone. What that wait costs a peer
 *                           (BENCHMARKS.md, "Where fm5 is not yet ahead"). The two bytes must be
 *                           readable: so with every allocator here, each of which keeps a header, or
 *                           other blocks of its page or span, before a block.
 *   passthrough:<spec>      the same wrapper without the load, to tell the wrapper's call from the load
 *                           (one wrapper at a time: a nested one is refused)
 * A DLL given by path is loaded with its folder added to the DLL search path, so that a support DLL
 * it loads itself (FastMM5's FastMM_FullDebugMode64.dll) is found beside it.
 * Every one is reached through g_alloc; nothing here is linked at build time. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bench_allocator g_alloc;

static HANDLE g_heap;

static void *__cdecl heap_malloc(size_t size) { return HeapAlloc(g_heap, 0, size ? size : 1); }
static void __cdecl heap_free(void *p) { HeapFree(g_heap, 0, p); }
static void *__cdecl heap_realloc(void *p, size_t size) { return HeapReAlloc(g_heap, 0, p, size); }
static void *__cdecl heap_calloc(size_t count, size_t size)
{
    if (size && count > (size_t)-1 / size)
        return NULL;
    size_t bytes = count * size;
    return HeapAlloc(g_heap, HEAP_ZERO_MEMORY, bytes ? bytes : 1);
}

static HMODULE load_dll(const char *path)
{
    char folder[MAX_PATH];
    size_t length = strlen(path);
    if (length < sizeof folder) {
        memcpy(folder, path, length + 1);
        char *slash = strrchr(folder, '\\');
        char *slash2 = strrchr(folder, '/');
        if (slash2 > slash)
            slash = slash2;
        if (slash) {
            *slash = '\0';
            SetDllDirectoryA(folder);
        }
    }
    HMODULE module = LoadLibraryA(path);
    if (!module)
        bench_fatal("cannot load %s (error %lu)", path, GetLastError());
    return module;
}

static FARPROC need_proc(HMODULE module, const char *dll, const char *name)
{
    FARPROC f = GetProcAddress(module, name);
    if (!f)
        bench_fatal("%s has no export %s", dll, name);
    return f;
}

/* A DLL that is in its debug mode from the start, with FastMM5's 20-frame traces. */
static int __cdecl always_in_debug_mode(void) { return 1; }
static int __cdecl leave_nothing(void) { return 0; }
static int __cdecl depth_20_only(unsigned depth) { return depth == 20 ? 0 : -1; }

/* GetProcAddress returns FARPROC; going through void * keeps -Wcast-function-type quiet. */
#define PROC(type, f) ((type)(void (*)(void))(f))

typedef int(__cdecl *set_switch_fn)(int enabled);

enum { FM5_PLAIN, FM5_AFFINITY, FM5_NO_CACHE };

static void load_fm5(const char *path, int variant)
{
    HMODULE m = load_dll(path);
    if (variant == FM5_AFFINITY)
        PROC(set_switch_fn, need_proc(m, path, "FastMM_SetAdaptiveSmallBlockArenaAffinity"))(1);
    if (variant == FM5_NO_CACHE)
        PROC(set_switch_fn, need_proc(m, path, "FastMM_SetThreadCaches"))(0);
    g_alloc.malloc_fn = PROC(bench_malloc_fn, need_proc(m, path, "fm5_malloc"));
    g_alloc.free_fn = PROC(bench_free_fn, need_proc(m, path, "fm5_free"));
    g_alloc.realloc_fn = PROC(bench_realloc_fn, need_proc(m, path, "fm5_realloc"));
    g_alloc.calloc_fn = PROC(bench_calloc_fn, need_proc(m, path, "fm5_calloc"));
    g_alloc.enter_debug_mode = PROC(bench_int_fn, need_proc(m, path, "FastMM_EnterDebugMode"));
    g_alloc.exit_debug_mode = PROC(bench_int_fn, need_proc(m, path, "FastMM_ExitDebugMode"));
    g_alloc.set_stack_depth =
        PROC(bench_set_depth_fn, need_proc(m, path, "FastMM_SetDebugModeStackTraceEntryCount"));
}

static void load_crt(const char *dll)
{
    HMODULE m = load_dll(dll);
    g_alloc.malloc_fn = PROC(bench_malloc_fn, need_proc(m, dll, "malloc"));
    g_alloc.free_fn = PROC(bench_free_fn, need_proc(m, dll, "free"));
    g_alloc.realloc_fn = PROC(bench_realloc_fn, need_proc(m, dll, "realloc"));
    g_alloc.calloc_fn = PROC(bench_calloc_fn, need_proc(m, dll, "calloc"));
}

/* headerread: and passthrough:. The mask is 0, read at every call, so that the compiler cannot drop
 * the load's part in the pointer: the callee's first look at the block waits for the load, as fm5's
 * span look-up waits for its status word. */
static bench_free_fn g_wrapped_free;
static bench_realloc_fn g_wrapped_realloc;
static volatile uintptr_t g_header_mask;

static inline void *after_header_read(void *p)
{
    uint16_t word = *(const volatile uint16_t *)((const char *)p - 2);
    return (char *)p + (word & g_header_mask);
}

static void __cdecl header_read_free(void *p) { g_wrapped_free(after_header_read(p)); }
static void *__cdecl header_read_realloc(void *p, size_t size) { return g_wrapped_realloc(after_header_read(p), size); }
static void __cdecl passthrough_free(void *p) { g_wrapped_free(p); }
static void *__cdecl passthrough_realloc(void *p, size_t size) { return g_wrapped_realloc(p, size); }

/* The length of the wrapper's prefix that `spec` starts with, else 0. */
static size_t wrapper_prefix(const char *spec)
{
    static const char *const prefixes[] = { "headerread:", "passthrough:" };
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(spec, prefixes[i], strlen(prefixes[i])) == 0)
            return strlen(prefixes[i]);
    return 0;
}

void bench_load_allocator(const char *spec)
{
    size_t prefix = wrapper_prefix(spec);
    if (prefix) {
        /* One wrapper: a second would take the first's place in g_wrapped_free and call itself. */
        if (wrapper_prefix(spec + prefix))
            bench_fatal("allocator '%s': the wrappers do not nest", spec);
        int header_read = strncmp(spec, "headerread:", prefix) == 0;
        bench_load_allocator(spec + prefix);
        g_wrapped_free = g_alloc.free_fn;
        g_wrapped_realloc = g_alloc.realloc_fn;
        g_alloc.free_fn = header_read ? header_read_free : passthrough_free;
        g_alloc.realloc_fn = header_read ? header_read_realloc : passthrough_realloc;
        return;
    }
    memset(&g_alloc, 0, sizeof g_alloc);
    /* fm5, fm5-affinity and fm5-nocache: what follows the name is nothing or ":<dll path>". */
    int variant = strncmp(spec, "fm5-affinity", 12) == 0  ? FM5_AFFINITY
                  : strncmp(spec, "fm5-nocache", 11) == 0 ? FM5_NO_CACHE
                                                          : FM5_PLAIN;
    const char *fm5_rest = variant == FM5_AFFINITY ? spec + 12
                           : variant == FM5_NO_CACHE ? spec + 11
                           : strncmp(spec, "fm5", 3) == 0 ? spec + 3
                                                         : NULL;
    if (fm5_rest && *fm5_rest && (*fm5_rest != ':' || !fm5_rest[1]))
        fm5_rest = NULL;
    if (variant != FM5_PLAIN && !fm5_rest)
        bench_fatal("unknown allocator '%s' (expected fm5-affinity, fm5-nocache, or either with :<dll>)", spec);
    if (fm5_rest && !*fm5_rest) {
        char path[MAX_PATH + 32];
        DWORD n = GetModuleFileNameA(NULL, path, MAX_PATH);
        if (n == 0 || n >= MAX_PATH)
            bench_fatal("cannot find the executable's folder");
        char *slash = strrchr(path, '\\');
        char *slash2 = strrchr(path, '/');
        if (slash2 > slash)
            slash = slash2;
        strcpy(slash ? slash + 1 : path, sizeof(void *) == 8 ? "fm5_64.dll" : "fm5_32.dll");
        load_fm5(path, variant);
    } else if (fm5_rest) {
        load_fm5(fm5_rest + 1, variant);
    } else if (strcmp(spec, "heap") == 0) {
        g_heap = GetProcessHeap();
        g_alloc.malloc_fn = heap_malloc;
        g_alloc.free_fn = heap_free;
        g_alloc.realloc_fn = heap_realloc;
        g_alloc.calloc_fn = heap_calloc;
    } else if (strcmp(spec, "msvcrt") == 0 || strcmp(spec, "ucrtbase") == 0) {
        load_crt(strcmp(spec, "msvcrt") == 0 ? "msvcrt.dll" : "ucrtbase.dll");
    } else {
        /* [debugdll:]<path>:<alloc>:<free>:<realloc>, the path possibly holding colons of its own. */
        int debug_dll = strncmp(spec, "debugdll:", 9) == 0;
        if (debug_dll)
            spec += 9;
        size_t len = strlen(spec);
        char *copy = malloc(len + 1);
        if (!copy)
            bench_fatal("out of memory");
        memcpy(copy, spec, len + 1);
        char *names[3];
        for (int i = 2; i >= 0; i--) {
            char *colon = strrchr(copy, ':');
            if (!colon || colon == copy)
                bench_fatal("unknown allocator '%s' (expected fm5, fm5:<dll>, heap, msvcrt, ucrtbase "
                            "or <dll>:<alloc>:<free>:<realloc>)", spec);
            *colon = '\0';
            names[i] = colon + 1;
            if (!*names[i])
                bench_fatal("empty function name in allocator '%s'", spec);
        }
        HMODULE m = load_dll(copy);
        g_alloc.malloc_fn = PROC(bench_malloc_fn, need_proc(m, copy, names[0]));
        g_alloc.free_fn = PROC(bench_free_fn, need_proc(m, copy, names[1]));
        g_alloc.realloc_fn = PROC(bench_realloc_fn, need_proc(m, copy, names[2]));
        if (debug_dll) {
            g_alloc.enter_debug_mode = always_in_debug_mode;
            g_alloc.exit_debug_mode = leave_nothing;
            g_alloc.set_stack_depth = depth_20_only;
        }
        /* The DLL string stays allocated: error messages may name it later. */
    }
}
