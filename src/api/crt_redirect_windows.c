/* Malloc redirection (fm5_redirect_crt, fm5.h): the heap functions that modules import from the
 * Microsoft C runtimes are pointed at fm5 by rewriting their import address tables.
 *
 * Two families of C runtime: msvcrt.dll, and the Universal CRT (ucrtbase.dll and the API sets
 * api-ms-win-crt-heap-l1-1-0.dll / api-ms-win-crt-string-l1-1-0.dll, which forward to it). Each family
 * has its own set of replacement functions, so that a pointer fm5 does not own (one the runtime
 * handed out before the switch, or one it allocated itself) goes back to that family's own function.
 * An import slot is rewritten only when it holds exactly the family's function (resolved with
 * GetProcAddress from msvcrt.dll or ucrtbase.dll), so imports bound elsewhere (another hook, another
 * runtime) are left alone; matching by value also covers aliases (strdup and _strdup) and imports by
 * ordinal.
 *
 * Locking: the loader lock (ntdll's LdrLockLoaderLock) is taken first, then `patch_lock`; the
 * load notification runs with the loader lock already held by the loader, so the order is the same.
 * Nothing here allocates from any heap. */
#include "fm5.h"
#include "base/events.h"
#include "base/os.h"
#include "base/platform.h"
#include "blocks/block_identity.h"
#include <windows.h>
#include <errno.h>
#include <string.h>
#include <wchar.h>

/* ---- what is replaced ------------------------------------------------------------------------- */

enum {
    R_MALLOC, R_CALLOC, R_REALLOC, R_FREE, R_MSIZE, R_EXPAND, R_RECALLOC, R_STRDUP, R_WCSDUP,
    R_ALIGNED_MALLOC, R_ALIGNED_FREE, R_ALIGNED_REALLOC, R_ALIGNED_RECALLOC, R_ALIGNED_MSIZE,
    R_NEW, R_DELETE, R_NEW_ARRAY, R_DELETE_ARRAY,
    R_REPLACED,                            /* the functions above are replaced; those below are helpers */
    R_ERRNO = R_REPLACED, R_CALLNEWH, R_GET_HEAP_HANDLE,
    R_COUNT
};

static const char *const function_names[R_COUNT] = {
    "malloc", "calloc", "realloc", "free", "_msize", "_expand", "_recalloc", "_strdup", "_wcsdup",
    "_aligned_malloc", "_aligned_free", "_aligned_realloc", "_aligned_recalloc", "_aligned_msize",
#ifdef _WIN64
    "??2@YAPEAX_K@Z", "??3@YAXPEAX@Z", "??_U@YAPEAX_K@Z", "??_V@YAXPEAX@Z",
#else
    "??2@YAPAXI@Z", "??3@YAXPAX@Z", "??_U@YAPAXI@Z", "??_V@YAXPAX@Z",
#endif
    "_errno", "_callnewh", "_get_heap_handle",
};

typedef struct crt_family {
    const wchar_t *main_dll;          /* where the originals are resolved */
    const char *const *import_names;  /* the DLL names a module imports them from (NULL-terminated) */
    volatile int resolved;
    void *original[R_COUNT];
    void *const *replacement;         /* R_REPLACED entries */
    HANDLE volatile heap;             /* the family's _get_heap_handle(), on first need */
} crt_family;

typedef void *(__cdecl *malloc_fn)(size_t);
typedef void *(__cdecl *realloc_fn)(void *, size_t);
typedef void (__cdecl *free_fn)(void *);
typedef size_t (__cdecl *msize_fn)(void *);
typedef void *(__cdecl *expand_fn)(void *, size_t);
typedef void *(__cdecl *recalloc_fn)(void *, size_t, size_t);
typedef void *(__cdecl *aligned_realloc_fn)(void *, size_t, size_t);
typedef void *(__cdecl *aligned_recalloc_fn)(void *, size_t, size_t, size_t);
typedef size_t (__cdecl *aligned_msize_fn)(void *, size_t, size_t);
typedef int *(__cdecl *errno_fn)(void);
typedef int (__cdecl *callnewh_fn)(size_t);
typedef intptr_t (__cdecl *get_heap_handle_fn)(void);

#define ORIGINAL(f, index, type) ((type)(void (*)(void))(f)->original[index])

static void set_errno(crt_family *f, int value)
{
    errno_fn get = ORIGINAL(f, R_ERRNO, errno_fn);
    if (get)
        *get() = value;
}

/* ---- pointers fm5 does not own ------------------------------------------------------------------ */

/* Whether `p` is a live block of the family's heap. The check never reads `p` itself (HeapValidate
 * looks the address up in the heap's segments first), so a wild pointer is refused safely. */
static int foreign_block(crt_family *f, const void *p)
{
    HANDLE heap = f->heap;
    if (!heap) {
        get_heap_handle_fn get = ORIGINAL(f, R_GET_HEAP_HANDLE, get_heap_handle_fn);
        if (!get)
            return 1; /* no way to check: trust the runtime with its own pointer */
        heap = (HANDLE)get();
        f->heap = heap;
    }
    return heap && HeapValidate(heap, 0, p);
}

static int readable(const void *address)
{
    MEMORY_BASIC_INFORMATION info;
    return VirtualQuery(address, &info, sizeof info) == sizeof info && info.State == MEM_COMMIT &&
           !(info.Protect & (PAGE_GUARD | PAGE_NOACCESS)) &&
           (info.Protect & (PAGE_READONLY | PAGE_READWRITE | PAGE_WRITECOPY | PAGE_EXECUTE_READ |
                            PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY));
}

/* An aligned block of the runtime: its allocator keeps the malloc block's address in the pointer-sized
 * slot below the aligned address (rounded down to a pointer boundary), as msvcrt and the UCRT do. */
static int foreign_aligned_block(crt_family *f, const void *p)
{
    const void *const *slot = (const void *const *)(((uintptr_t)p & ~(uintptr_t)(sizeof(void *) - 1)) -
                                                    sizeof(void *));
    if (!readable(slot))
        return 0;
    const void *base = *slot;
    return base && (uintptr_t)base < (uintptr_t)p && foreign_block(f, base);
}

static void report(int kind, const void *p, const char *detail)
{
    fm5_event_report(kind, p, 0, detail);
}

/* What a live fm5 block can hold, or 0 when `p` is no live block: a quiet look (fm5's entry points
 * report the misuse themselves). */
static size_t live_usable(void *p)
{
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_block(p, &facts);
    return identity >= FM5_LIVE_SMALL_BLOCK ? fm5_live_block_usable_size(p, identity, &facts) : 0;
}

static const char neither_heap[] = "the pointer is neither fm5's nor a live block of the C runtime's heap";

/* ---- the plain family --------------------------------------------------------------------------- */

static void *do_malloc(crt_family *f, size_t size)
{
    void *p = FastMM_GetMem(size);
    if (FM5_UNLIKELY(!p))
        set_errno(f, ENOMEM);
    return p;
}

/* Zeroes the block from `from` to its usable size: a block from calloc or _recalloc is zero beyond
 * what the program asked for, so that a later _recalloc, which zeroes from the old usable size
 * (_msize), leaves every byte past the old request zero. */
static void zero_tail(void *p, size_t from)
{
    size_t usable = FastMM_BlockMaximumUserBytes(p);
    if (usable > from)
        memset((char *)p + from, 0, usable - from);
}

static void *do_calloc(crt_family *f, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) {
        set_errno(f, ENOMEM);
        return NULL;
    }
    size_t total = count * size;
    void *p = FastMM_AllocMem(total);
    if (FM5_UNLIKELY(!p)) {
        set_errno(f, ENOMEM);
        return NULL;
    }
    zero_tail(p, total);
    return p;
}

static void do_free(crt_family *f, void *p)
{
    if (!p)
        return;
    if (FM5_LIKELY(fm5_owns(p))) {
        FastMM_FreeMem(p); /* an invalid pointer is reported by fm5 */
        return;
    }
    if (foreign_block(f, p))
        ORIGINAL(f, R_FREE, free_fn)(p);
    else
        report(FastMM_EventInvalidFree, p, neither_heap);
}

/* A foreign block moves into fm5: the new block gets min(old _msize, new size) bytes and the old one
 * is freed by its own runtime. `zero` zeroes what lies beyond the copy (_recalloc). */
static void *move_foreign(crt_family *f, void *p, size_t size, int zero)
{
    size_t old_size = ORIGINAL(f, R_MSIZE, msize_fn)(p);
    if (old_size == (size_t)-1)
        old_size = 0;
    void *q = FastMM_GetMem(size);
    if (!q) {
        set_errno(f, ENOMEM);
        return NULL; /* the old block is untouched */
    }
    size_t copy = old_size < size ? old_size : size;
    memcpy(q, p, copy);
    if (zero)
        zero_tail(q, copy);
    ORIGINAL(f, R_FREE, free_fn)(p);
    return q;
}

static void *do_realloc(crt_family *f, void *p, size_t size)
{
    if (!p)
        return do_malloc(f, size);
    if (FM5_LIKELY(fm5_owns(p))) {
        if (size == 0) {
            FastMM_FreeMem(p);
            return NULL;
        }
        if (!live_usable(p))
            return FastMM_ReallocMem(p, size); /* NULL, with fm5's event */
        void *q = FastMM_ReallocMem(p, size);
        if (!q)
            set_errno(f, ENOMEM);
        return q;
    }
    if (!foreign_block(f, p)) {
        report(FastMM_EventInvalidRealloc, p, neither_heap);
        return NULL;
    }
    if (size == 0) {
        ORIGINAL(f, R_FREE, free_fn)(p);
        return NULL;
    }
    return move_foreign(f, p, size, 0);
}

static size_t do_msize(crt_family *f, void *p)
{
    if (!p) {
        set_errno(f, EINVAL);
        return (size_t)-1;
    }
    if (FM5_LIKELY(fm5_owns(p))) {
        size_t size = FastMM_BlockMaximumUserBytes(p); /* 0, with an event, for an invalid pointer */
        return size ? size : (size_t)-1;
    }
    if (foreign_block(f, p))
        return ORIGINAL(f, R_MSIZE, msize_fn)(p);
    report(FastMM_EventInvalidQuery, p, neither_heap);
    return (size_t)-1;
}

/* In place only: fm5 blocks keep their size class, so _expand succeeds when the new size fits in the
 * block's usable size and returns NULL otherwise. */
static void *do_expand(crt_family *f, void *p, size_t size)
{
    if (!p) {
        set_errno(f, EINVAL);
        return NULL;
    }
    if (fm5_owns(p)) {
        size_t usable = live_usable(p);
        if (usable == 0) {
            report(FastMM_EventInvalidRealloc, p, "_expand of a pointer that is not a live fm5 block");
            return NULL;
        }
        if (size > usable) {
            set_errno(f, ENOMEM);
            return NULL;
        }
        return p;
    }
    if (foreign_block(f, p))
        return ORIGINAL(f, R_EXPAND, expand_fn)(p, size);
    report(FastMM_EventInvalidRealloc, p, neither_heap);
    return NULL;
}

static void *do_recalloc(crt_family *f, void *p, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) {
        set_errno(f, ENOMEM);
        return NULL;
    }
    size_t total = count * size;
    if (!p)
        return do_calloc(f, count, size);
    if (fm5_owns(p)) {
        size_t old_usable = live_usable(p);
        if (old_usable == 0)
            return FastMM_ReallocMem(p, total); /* NULL, with fm5's event */
        if (total == 0) {
            FastMM_FreeMem(p);
            return NULL;
        }
        void *q = FastMM_ReallocMem(p, total);
        if (!q) {
            set_errno(f, ENOMEM);
            return NULL;
        }
        zero_tail(q, old_usable < total ? old_usable : total);
        return q;
    }
    if (!foreign_block(f, p)) {
        report(FastMM_EventInvalidRealloc, p, neither_heap);
        return NULL;
    }
    if (total == 0) {
        ORIGINAL(f, R_FREE, free_fn)(p);
        return NULL;
    }
    return move_foreign(f, p, total, 1);
}

static char *do_strdup(crt_family *f, const char *s)
{
    if (!s)
        return NULL;
    size_t size = strlen(s) + 1;
    char *p = do_malloc(f, size);
    if (p)
        memcpy(p, s, size);
    return p;
}

static wchar_t *do_wcsdup(crt_family *f, const wchar_t *s)
{
    if (!s)
        return NULL;
    size_t size = (wcslen(s) + 1) * sizeof(wchar_t);
    wchar_t *p = do_malloc(f, size);
    if (p)
        memcpy(p, s, size);
    return p;
}

/* ---- the aligned family: an fm5 block holds the aligned address, the block's own address in the
 * pointer-sized slot just below it (the runtimes' layout, which lets every check stay the same) ---- */

static int bad_alignment(crt_family *f, size_t alignment)
{
    if (alignment == 0 || (alignment & (alignment - 1))) {
        set_errno(f, EINVAL);
        return 1;
    }
    return 0;
}

static void *do_aligned_malloc(crt_family *f, size_t size, size_t alignment)
{
    if (bad_alignment(f, alignment))
        return NULL;
    if (alignment < sizeof(void *))
        alignment = sizeof(void *);
    size_t extra = alignment - 1 + sizeof(void *);
    if (size > SIZE_MAX - extra) {
        set_errno(f, ENOMEM);
        return NULL;
    }
    char *base = do_malloc(f, size + extra);
    if (!base)
        return NULL;
    uintptr_t p = ((uintptr_t)base + sizeof(void *) + alignment - 1) & ~(uintptr_t)(alignment - 1);
    ((void **)p)[-1] = base;
    return (void *)p;
}

/* The block behind an aligned fm5 address, or NULL (then reported) when `p` is not one. The slot below
 * `p` is read only when it lies in fm5's memory, which is mapped (a granule released meanwhile is
 * handled by the release guard, as for every read fm5 makes of an unproven pointer). */
static void *aligned_base(const void *p, int kind)
{
    if (((uintptr_t)p & (sizeof(void *) - 1)) == 0 && fm5_owns((const char *)p - sizeof(void *))) {
        void *base = ((void *const *)p)[-1];
        fm5_block_facts facts;
        enum fm5_block_identity identity;
        if ((uintptr_t)base < (uintptr_t)p && fm5_owns(base) &&
            (identity = fm5_identify_block(base, &facts)) >= FM5_LIVE_SMALL_BLOCK &&
            (uintptr_t)p - (uintptr_t)base <= fm5_live_block_usable_size(base, identity, &facts))
            return base;
    }
    report(kind, p, "the pointer is not an address that _aligned_malloc handed out, or its block is free");
    return NULL;
}

/* The bytes an aligned fm5 block can hold from its aligned address. */
static size_t aligned_usable(void *p, void *base)
{
    return FastMM_BlockMaximumUserBytes(base) - (size_t)((char *)p - (char *)base);
}

static void do_aligned_free(crt_family *f, void *p)
{
    if (!p)
        return;
    if (fm5_owns(p)) {
        void *base = aligned_base(p, FastMM_EventInvalidFree);
        if (base)
            FastMM_FreeMem(base);
        return;
    }
    if (foreign_aligned_block(f, p))
        ORIGINAL(f, R_ALIGNED_FREE, free_fn)(p);
    else
        report(FastMM_EventInvalidFree, p, neither_heap);
}

/* _aligned_realloc and _aligned_recalloc of an fm5 block: a new aligned block, the content copied
 * (min(old usable size, new size)), the old block freed; with `zero`, what lies beyond the copy is
 * zeroed. Foreign aligned blocks stay in their runtime's heap (its own function resizes them). */
static void *aligned_resize(crt_family *f, void *p, size_t size, size_t alignment, int zero)
{
    void *base = aligned_base(p, FastMM_EventInvalidRealloc);
    if (!base)
        return NULL;
    if (size == 0) {
        FastMM_FreeMem(base);
        return NULL;
    }
    size_t old_size = aligned_usable(p, base);
    void *q = do_aligned_malloc(f, size, alignment);
    if (!q)
        return NULL;
    size_t copy = old_size < size ? old_size : size;
    memcpy(q, p, copy);
    if (zero) {
        size_t usable = aligned_usable(q, ((void **)q)[-1]);
        memset((char *)q + copy, 0, usable - copy);
    }
    FastMM_FreeMem(base);
    return q;
}

static void *do_aligned_realloc(crt_family *f, void *p, size_t size, size_t alignment)
{
    if (bad_alignment(f, alignment))
        return NULL;
    if (!p)
        return do_aligned_malloc(f, size, alignment);
    if (fm5_owns(p))
        return aligned_resize(f, p, size, alignment, 0);
    if (foreign_aligned_block(f, p))
        return ORIGINAL(f, R_ALIGNED_REALLOC, aligned_realloc_fn)(p, size, alignment);
    report(FastMM_EventInvalidRealloc, p, neither_heap);
    return NULL;
}

static void *do_aligned_recalloc(crt_family *f, void *p, size_t count, size_t size, size_t alignment)
{
    if (bad_alignment(f, alignment))
        return NULL;
    if (size && count > SIZE_MAX / size) {
        set_errno(f, ENOMEM);
        return NULL;
    }
    size_t total = count * size;
    if (!p) {
        void *q = do_aligned_malloc(f, total, alignment);
        if (q)
            memset(q, 0, aligned_usable(q, ((void **)q)[-1]));
        return q;
    }
    if (fm5_owns(p))
        return aligned_resize(f, p, total, alignment, 1);
    if (foreign_aligned_block(f, p))
        return ORIGINAL(f, R_ALIGNED_RECALLOC, aligned_recalloc_fn)(p, count, size, alignment);
    report(FastMM_EventInvalidRealloc, p, neither_heap);
    return NULL;
}

static size_t do_aligned_msize(crt_family *f, void *p, size_t alignment, size_t offset)
{
    if (!p) {
        set_errno(f, EINVAL);
        return (size_t)-1;
    }
    if (fm5_owns(p)) {
        void *base = aligned_base(p, FastMM_EventInvalidQuery);
        return base ? aligned_usable(p, base) : (size_t)-1;
    }
    if (foreign_aligned_block(f, p))
        return ORIGINAL(f, R_ALIGNED_MSIZE, aligned_msize_fn)(p, alignment, offset);
    report(FastMM_EventInvalidQuery, p, neither_heap);
    return (size_t)-1;
}

/* ---- msvcrt's operator new and delete --------------------------------------------------------- */

/* As msvcrt.dll's own operator new: while the allocation fails, the handler set with _set_new_handler
 * is called (through the runtime's _callnewh) and the allocation retried while it returns non-zero;
 * then NULL, since msvcrt.dll has no std::bad_alloc to throw. */
static void *do_new(crt_family *f, size_t size)
{
    for (;;) {
        void *p = FastMM_GetMem(size);
        if (FM5_LIKELY(p != NULL))
            return p;
        callnewh_fn callnewh = ORIGINAL(f, R_CALLNEWH, callnewh_fn);
        if (!callnewh || !callnewh(size)) {
            set_errno(f, ENOMEM);
            return NULL;
        }
    }
}

/* ---- one set of replacements per family ------------------------------------------------------- */

static crt_family families[2];

#define FAMILY_REPLACEMENTS(N)                                                                              \
    static void *__cdecl malloc_##N(size_t n) { return do_malloc(&families[N], n); }                       \
    static void *__cdecl calloc_##N(size_t c, size_t n) { return do_calloc(&families[N], c, n); }          \
    static void *__cdecl realloc_##N(void *p, size_t n) { return do_realloc(&families[N], p, n); }        \
    static void __cdecl free_##N(void *p) { do_free(&families[N], p); }                                   \
    static size_t __cdecl msize_##N(void *p) { return do_msize(&families[N], p); }                        \
    static void *__cdecl expand_##N(void *p, size_t n) { return do_expand(&families[N], p, n); }          \
    static void *__cdecl recalloc_##N(void *p, size_t c, size_t n) { return do_recalloc(&families[N], p, c, n); } \
    static char *__cdecl strdup_##N(const char *s) { return do_strdup(&families[N], s); }                 \
    static wchar_t *__cdecl wcsdup_##N(const wchar_t *s) { return do_wcsdup(&families[N], s); }           \
    static void *__cdecl aligned_malloc_##N(size_t n, size_t a) { return do_aligned_malloc(&families[N], n, a); } \
    static void __cdecl aligned_free_##N(void *p) { do_aligned_free(&families[N], p); }                   \
    static void *__cdecl aligned_realloc_##N(void *p, size_t n, size_t a)                                  \
    {                                                                                                       \
        return do_aligned_realloc(&families[N], p, n, a);                                                   \
    }                                                                                                       \
    static void *__cdecl aligned_recalloc_##N(void *p, size_t c, size_t n, size_t a)                       \
    {                                                                                                       \
        return do_aligned_recalloc(&families[N], p, c, n, a);                                               \
    }                                                                                                       \
    static size_t __cdecl aligned_msize_##N(void *p, size_t a, size_t o)                                   \
    {                                                                                                       \
        return do_aligned_msize(&families[N], p, a, o);                                                     \
    }                                                                                                       \
    static void *__cdecl new_##N(size_t n) { return do_new(&families[N], n); }                            \
    static void *const replacements_##N[R_REPLACED] = {                                                     \
        (void *)malloc_##N, (void *)calloc_##N, (void *)realloc_##N, (void *)free_##N, (void *)msize_##N,    \
        (void *)expand_##N, (void *)recalloc_##N, (void *)strdup_##N, (void *)wcsdup_##N,                  \
        (void *)aligned_malloc_##N, (void *)aligned_free_##N, (void *)aligned_realloc_##N,                  \
        (void *)aligned_recalloc_##N, (void *)aligned_msize_##N,                                            \
        (void *)new_##N, (void *)free_##N, (void *)new_##N, (void *)free_##N,                               \
    };

FAMILY_REPLACEMENTS(0)
FAMILY_REPLACEMENTS(1)

static const char *const msvcrt_dlls[] = {"msvcrt.dll", NULL};
static const char *const ucrt_dlls[] = {"ucrtbase.dll", "api-ms-win-crt-heap-l1-1-0.dll",
                                        "api-ms-win-crt-string-l1-1-0.dll", NULL};

static crt_family families[2] = {
    {L"msvcrt.dll", msvcrt_dlls, 0, {0}, replacements_0, NULL},
    {L"ucrtbase.dll", ucrt_dlls, 0, {0}, replacements_1, NULL},
};

/* ---- patching import tables ------------------------------------------------------------------- */

static fm5_lock patch_lock;
static HMODULE own_module;
static volatile int redirect_installed;

static crt_family *family_of(const char *dll_name)
{
    for (unsigned i = 0; i < 2; i++)
        for (const char *const *name = families[i].import_names; *name; name++)
            if (lstrcmpiA(dll_name, *name) == 0)
                return &families[i];
    return NULL;
}

/* Resolves the family's functions once its DLL is loaded. Returns 1 when resolved. */
static int resolve(crt_family *f)
{
    if (f->resolved)
        return 1;
    HMODULE crt = GetModuleHandleW(f->main_dll);
    if (!crt)
        return 0;
    for (unsigned i = 0; i < R_COUNT; i++)
        f->original[i] = (void *)GetProcAddress(crt, function_names[i]);
    /* Without these the foreign paths cannot work: leave the family alone. */
    if (!f->original[R_FREE] || !f->original[R_MSIZE] || !f->original[R_MALLOC])
        return 0;
    __atomic_store_n(&f->resolved, 1, __ATOMIC_RELEASE);
    return 1;
}

static int is_crt_module(HMODULE module)
{
    for (unsigned i = 0; i < 2; i++) {
        HMODULE crt = GetModuleHandleW(families[i].main_dll);
        if (crt && crt == module)
            return 1;
    }
    return 0;
}

static void write_slot(void **slot, void *value)
{
    DWORD old;
    if (!VirtualProtect(slot, sizeof *slot, PAGE_READWRITE, &old))
        return;
    if (old & (PAGE_EXECUTE | PAGE_EXECUTE_READ | PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY)) {
        DWORD ignored;
        VirtualProtect(slot, sizeof *slot, PAGE_EXECUTE_READWRITE, &ignored);
    }
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    DWORD ignored;
    VirtualProtect(slot, sizeof *slot, old, &ignored);
}

/* Rewrites every slot of the module's import table that holds a family function. Returns how many. */
static unsigned patch_module(HMODULE module)
{
    if (!module || module == own_module || is_crt_module(module))
        return 0;
    const unsigned char *base = (const unsigned char *)module;
    const IMAGE_DOS_HEADER *dos = (const IMAGE_DOS_HEADER *)base;
    if (dos->e_magic != IMAGE_DOS_SIGNATURE)
        return 0;
    const IMAGE_NT_HEADERS *nt = (const IMAGE_NT_HEADERS *)(base + dos->e_lfanew);
    if (nt->Signature != IMAGE_NT_SIGNATURE || nt->OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR_MAGIC ||
        nt->OptionalHeader.NumberOfRvaAndSizes <= IMAGE_DIRECTORY_ENTRY_IMPORT)
        return 0;
    const IMAGE_DATA_DIRECTORY *directory = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_IMPORT];
    if (!directory->VirtualAddress || directory->Size < sizeof(IMAGE_IMPORT_DESCRIPTOR))
        return 0;
    unsigned patched = 0;
    for (const IMAGE_IMPORT_DESCRIPTOR *d = (const IMAGE_IMPORT_DESCRIPTOR *)(base + directory->VirtualAddress);
         d->Name && d->FirstThunk; d++) {
        crt_family *f = family_of((const char *)(base + d->Name));
        if (!f || !resolve(f))
            continue;
        for (void **slot = (void **)(base + d->FirstThunk); *slot; slot++) {
            void *current = *slot;
            for (unsigned i = 0; i < R_REPLACED; i++) {
                if (f->original[i] && current == f->original[i]) {
                    write_slot(slot, f->replacement[i]);
                    patched++;
                    break;
                }
            }
        }
    }
    return patched;
}

/* ---- modules loaded later: ntdll's load notification ------------------------------------------- */

typedef struct dll_notification_data {
    ULONG flags;
    const void *full_name;
    const void *base_name;
    void *base;
    ULONG size;
} dll_notification_data;

#define DLL_NOTIFICATION_LOADED 1u

typedef void(CALLBACK *dll_notification_fn)(ULONG reason, const dll_notification_data *data, void *context);
typedef LONG(NTAPI *register_dll_notification_fn)(ULONG flags, dll_notification_fn callback, void *context,
                                                  void **cookie);
typedef LONG(NTAPI *lock_loader_fn)(ULONG flags, ULONG *disposition, ULONG_PTR *cookie);
typedef LONG(NTAPI *unlock_loader_fn)(ULONG flags, ULONG_PTR cookie);
typedef BOOL(WINAPI *enum_modules_fn)(HANDLE process, HMODULE *modules, DWORD bytes, DWORD *needed);

/* Runs before the new module's DllMain, with its imports bound: the module's own start-up code
 * already allocates from fm5. */
static void CALLBACK on_dll_notification(ULONG reason, const dll_notification_data *data, void *context)
{
    (void)context;
    if (reason != DLL_NOTIFICATION_LOADED || !data)
        return;
    fm5_lock_with_timeout(&patch_lock, FM5_WAIT_FOREVER);
    patch_module((HMODULE)data->base);
    fm5_unlock(&patch_lock);
}

#define MAX_MODULES 2048u
static HMODULE module_list[MAX_MODULES];

int FM5_CALL fm5_redirect_crt(void)
{
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    HMODULE kernel32 = GetModuleHandleW(L"kernel32.dll");
    if (!ntdll || !kernel32)
        return -1;
    lock_loader_fn lock_loader = (lock_loader_fn)(void (*)(void))GetProcAddress(ntdll, "LdrLockLoaderLock");
    unlock_loader_fn unlock_loader =
        (unlock_loader_fn)(void (*)(void))GetProcAddress(ntdll, "LdrUnlockLoaderLock");
    register_dll_notification_fn register_notification =
        (register_dll_notification_fn)(void (*)(void))GetProcAddress(ntdll, "LdrRegisterDllNotification");
    enum_modules_fn enum_modules = (enum_modules_fn)(void (*)(void))GetProcAddress(kernel32, "K32EnumProcessModules");
    if (!register_notification || !enum_modules)
        return -1;

    ULONG_PTR cookie = 0;
    int loader_locked = lock_loader && unlock_loader && lock_loader(0, NULL, &cookie) == 0;
    fm5_lock_with_timeout(&patch_lock, FM5_WAIT_FOREVER);
    int result = -1;
    if (!redirect_installed) {
        /* Pinned: FreeLibrary can no longer unmap the functions every import table now points at. */
        HMODULE own = NULL;
        void *notification_cookie = NULL;
        if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
                                (LPCWSTR)(void *)fm5_redirect_crt, &own) ||
            register_notification(0, on_dll_notification, NULL, &notification_cookie) != 0)
            goto done;
        own_module = own;
        redirect_installed = 1;
    }
    DWORD needed = 0;
    if (!enum_modules(GetCurrentProcess(), module_list, sizeof module_list, &needed))
        goto done;
    unsigned count = needed / sizeof(HMODULE);
    if (count > MAX_MODULES)
        count = MAX_MODULES;
    unsigned patched = 0;
    for (unsigned i = 0; i < count; i++)
        patched += patch_module(module_list[i]);
    result = (int)patched;
done:
    fm5_unlock(&patch_lock);
    if (loader_locked)
        unlock_loader(0, cookie);
    return result;
}
