/*
 * test_stack_traces — the stack traces of debug blocks list the right return addresses in order, the
 * same as the system's RtlCaptureStackBackTrace on the same call chain.
 *
 * Built twice (tests/CMakeLists.txt): test_stack_traces links the DLL and checks the traces fm5 stores
 * in debug blocks; test_stack_traces_unwinder links fm5_static and also calls the Win64 unwinder
 * (src/debug/stack_unwind_windows.c) itself.
 *   - Chains of noinline functions with frames of every shape the unwind data describes: plain, a
 *     large local array (UWOP_ALLOC_LARGE, a stack probe), a variable-length array (RBP as frame
 *     pointer), callee-saved registers (pushes), XMM registers (saves) and recursion; reached directly,
 *     and through a callback from msvcrt's qsort (a system DLL's frames in the middle).
 *   - At the end of each chain, a debug block is allocated and RtlCaptureStackBackTrace is called right
 *     after: the block's allocation trace, whose first entry is the call of FastMM_GetMem, must then
 *     equal the system's trace from its second entry on, entry for entry, and both first entries must be
 *     call sites in the same function. The same for the free trace, and for blocks allocated and freed
 *     through fm5_malloc/fm5_free and fm5_realloc (the C family's wrappers, frameless on Win32).
 *   - Win64, static build: fm5_unwind_stack against RtlCaptureStackBackTrace directly, each chain twice
 *     (the second time from the cache: the hit count grows); and through two helper DLLs built at the
 *     same base address with differently shaped frames, loaded one after the other: after the first is
 *     unloaded, the cache must not give the second the first one's steps.
 */
#include "test_util.h"

#ifdef FM5_STATIC
#include "api/startup.h"
#include "debug/stack_unwind.h"
#endif

#define NOINLINE __attribute__((noinline, noclone))
#define DEPTH 40u
/* Two call sites in one function are this close at most (the leaf is small). */
#define SAME_FUNCTION_BYTES 256u

typedef int (*link_fn)(int);

static volatile link_fn next_link;
static unsigned long compared_traces;

/* ---- the end of a chain: fm5's traces against the system's -------------------------------------- */

__attribute__((unused)) static void compare(const char *what, void *const *fm5_frames, unsigned fm5_count, void *const *system_frames,
                    unsigned system_count)
{
    compared_traces++;
    /* fm5's trace starts at the call site in the caller. The system's starts there too on Win64; Wine's
     * Win32 RtlCaptureStackBackTrace starts one frame above (at the caller's return address), and then
     * fm5's first frame has no counterpart. */
    unsigned shift = fm5_count == system_count + 1 && system_count > 0 && fm5_frames[1] == system_frames[0];
    if (!CHECK_MSG(fm5_count == system_count + shift, "%s: fm5 found %u frames, the system %u", what, fm5_count,
                   system_count) &&
        getenv("TRACE_DUMP"))
        for (unsigned i = 0; i < DEPTH && (i < fm5_count || i < system_count); i++)
            tu_info("  %2u  %p  %p", i, i < fm5_count ? fm5_frames[i] : NULL, i < system_count ? system_frames[i] : NULL);
    if (fm5_count == 0 || system_count == 0)
        return;
    if (!shift) {
        uintptr_t a = (uintptr_t)fm5_frames[0], b = (uintptr_t)system_frames[0];
        CHECK_MSG((a > b ? a - b : b - a) < SAME_FUNCTION_BYTES, "%s: first frames %p and %p are not in one function",
                  what, fm5_frames[0], system_frames[0]);
    }
    for (unsigned i = shift ? 0 : 1; i + shift < fm5_count && i < system_count; i++)
        if (!CHECK_MSG(fm5_frames[i + shift] == system_frames[i], "%s: frame %u is %p, the system's %p", what, i + shift,
                       fm5_frames[i + shift], system_frames[i]))
            break;
}

#ifndef FM5_STATIC
/* The block's stored trace, its non-NULL entries. */
static unsigned stored_trace(const void *p, int free_trace, void **frames)
{
    unsigned entries = tu_debug_entry_count(p), n = 0;
    while (n < entries && (frames[n] = tu_debug_trace_entry(p, free_trace, n)) != NULL)
        n++;
    return n;
}
#endif

static const char *chain_name;

/* The system's trace from the caller, up to its first NULL frame (past the thread's first function
 * Wine reports a NULL and then whatever the stack holds). Always inlined: its frame is the caller's. */
#define system_trace(frames) count_to_null((frames), RtlCaptureStackBackTrace(0, DEPTH, (frames), NULL))

#if !defined(FM5_STATIC) || defined(_WIN64)
#define COMPARES_TRACES 1
#else
#define COMPARES_TRACES 0
#endif

__attribute__((unused)) static unsigned count_to_null(void *const *frames, unsigned count)
{
    for (unsigned i = 0; i < count; i++)
        if (!frames[i])
            return i;
    return count;
}

#ifndef FM5_STATIC
/* The stored trace starts at the call site in `function` (within SAME_FUNCTION_BYTES x 4 of its start)
 * and goes on at `return_address`, the function's own return: no frame between is lost. compare()
 * cannot tell on Win32, where Wine's trace leaves out the first frame and fm5's may then be one short. */
static void starts_in(const char *what, void *const *frames, unsigned count, uintptr_t function,
                      void *return_address)
{
    uintptr_t first = count > 0 ? (uintptr_t)frames[0] : 0;
    CHECK_MSG(first > function && first - function < 4 * SAME_FUNCTION_BYTES,
              "%s: first frame %p is not a call site in the function at %p", what, (void *)first, (void *)function);
    CHECK_MSG(count > 1 && frames[1] == return_address, "%s: second frame %p, the function returns to %p", what,
              count > 1 ? frames[1] : NULL, return_address);
}

/* A debug block allocated by `allocation` and freed by `release` (of `p`), each trace compared with the
 * system's right after. The DLL drops its own frames from what it stores (a static build cannot tell
 * them apart). One function a family, each small enough for its call sites to lie within
 * SAME_FUNCTION_BYTES of the system's. */
#define TRACED_PAIR(function, family, allocation, release)                                                \
    NOINLINE static void function(void)                                                                  \
    {                                                                                                     \
        void *system_frames[DEPTH];                                                                       \
        void *fm5_frames[DEPTH];                                                                          \
        char what[96];                                                                                    \
        void *p = allocation;                                                                             \
        unsigned system_count = system_trace(system_frames);                                              \
        if (CHECK(p != NULL)) {                                                                           \
            snprintf(what, sizeof what, "%s, %s: allocation trace", chain_name, family);                  \
            unsigned count = stored_trace(p, 0, fm5_frames);                                              \
            compare(what, fm5_frames, count, system_frames, system_count);                                \
            starts_in(what, fm5_frames, count, (uintptr_t)function, __builtin_return_address(0));          \
        }                                                                                                 \
        void *freed = p;                                                                                  \
        release;                                                                                          \
        system_count = system_trace(system_frames);                                                       \
        snprintf(what, sizeof what, "%s, %s: free trace", chain_name, family);                            \
        unsigned count = stored_trace(freed, 1, fm5_frames);                                              \
        compare(what, fm5_frames, count, system_frames, system_count);                                    \
        starts_in(what, fm5_frames, count, (uintptr_t)function, __builtin_return_address(0));              \
    }

/* The FastMM5 entry points, and the C family's wrappers, which Win32 builds without frames
 * (FM5_TAIL_ONLY): a wrapper that left out its frame and then called on would lose its caller's frame
 * from the traces. */
TRACED_PAIR(pair_fastmm5, "FastMM5", FastMM_GetMem(24), CHECK_EQ_INT(FastMM_FreeMem(p), 0))
TRACED_PAIR(pair_malloc_free, "fm5_malloc/fm5_free", fm5_malloc(24), fm5_free(p))
TRACED_PAIR(pair_realloc, "fm5_realloc(NULL)/fm5_realloc(0)", fm5_realloc(NULL, 24), CHECK(fm5_realloc(p, 0) == NULL))
#endif

NOINLINE static int leaf(int value)
{
#ifndef FM5_STATIC
    pair_fastmm5();
    pair_malloc_free();
    pair_realloc();
#endif

#if defined(FM5_STATIC) && defined(_WIN64)
    void *system_frames[DEPTH];
    void *fm5_frames[DEPTH];
    char what[96];
    int unwound = fm5_unwind_stack(fm5_frames, DEPTH, 0, 0, 0);
    unsigned system_count = system_trace(system_frames);
    snprintf(what, sizeof what, "%s: fm5_unwind_stack", chain_name);
    if (CHECK_MSG(unwound >= 0, "%s: fm5_unwind_stack needed the system unwinder", chain_name))
        compare(what, fm5_frames, (unsigned)unwound, system_frames, system_count);
#endif
    return value + 1;
}

/* ---- links of every frame shape ----------------------------------------------------------------- */

NOINLINE static int plain(int value)
{
    return next_link(value) + 1;
}

NOINLINE static int large_array(int value)
{
    volatile char buffer[20000];
    buffer[0] = (char)value;
    buffer[19999] = (char)(value >> 1);
    return next_link(value + buffer[0]) + buffer[19999];
}

NOINLINE static int variable_array(int value)
{
    volatile char buffer[(value & 63) + 40];
    buffer[0] = (char)value;
    return next_link(value) + buffer[0];
}

NOINLINE static int saved_registers(int value)
{
#ifdef _WIN64
    __asm__ volatile("" ::: "rbx", "rsi", "rdi", "r12", "r13", "r14", "r15");
#else
    __asm__ volatile("" ::: "ebx", "esi", "edi");
#endif
    return next_link(value) * 2;
}

NOINLINE static int saved_xmm_registers(int value)
{
#ifdef _WIN64
    __asm__ volatile("" ::: "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
#endif
    return next_link(value) - 1;
}

static int recursion_left;

NOINLINE static int recursive(int value)
{
    if (recursion_left-- > 0)
        return recursive(value + 1) + 1;
    return leaf(value);
}

/* Each link calls the next through `next_link`, which the chain sets up link by link. */
static link_fn chain[8];
static unsigned chain_length, chain_position;

NOINLINE static int step(int value)
{
    if (chain_position >= chain_length)
        return leaf(value);
    link_fn fn = chain[chain_position++];
    return fn(value) + 1;
}

static int run_chain(const char *name, const link_fn *links, unsigned count)
{
    chain_name = name;
    for (unsigned i = 0; i < count; i++)
        chain[i] = links[i];
    chain_length = count;
    chain_position = 0;
    next_link = step;
    recursion_left = 5;
    return step(1);
}

static const link_fn shapes[] = { plain, large_array, variable_array, saved_registers, saved_xmm_registers,
                                  recursive };

/* ---- through a system DLL ----------------------------------------------------------------------- */

static int compared_in_qsort;

static int compare_ints(const void *a, const void *b)
{
    if (!compared_in_qsort) {
        compared_in_qsort = 1;
        run_chain("through qsort", shapes, 6);
    }
    return *(const int *)a - *(const int *)b;
}

static void through_qsort(void)
{
    int values[8] = { 5, 3, 8, 1, 9, 2, 7, 4 };
    compared_in_qsort = 0;
    qsort(values, 8, sizeof values[0], compare_ints);
    CHECK(compared_in_qsort);
}

/* ---- the cache and module unloads (Win64, static build) ----------------------------------------- */

#if defined(FM5_STATIC) && defined(_WIN64)
typedef int (*helper_call_fn)(link_fn, int);

static int helper_leaf(int value)
{
    return leaf(value);
}

static void through_helper(const char *dll)
{
    HMODULE module = LoadLibraryA(dll);
    if (!CHECK_MSG(module != NULL, "LoadLibrary(%s) failed, error %lu", dll, (unsigned long)GetLastError()))
        return;
    helper_call_fn call = (helper_call_fn)(void (*)(void))GetProcAddress(module, "helper_call");
    if (CHECK(call != NULL)) {
        char name[64];
        snprintf(name, sizeof name, "through %s at %p", dll, (void *)module);
        chain_name = name;
        for (int round = 0; round < 2; round++)
            call(helper_leaf, 1);
        tu_info("%s", name);
    }
    FreeLibrary(module);
}

static void cache_and_unloads(void)
{
    SECTION("Win64 unwinder: the cache and the remembered walks serve repeated traces, and module unloads empty them");
    size_t hits_before, misses_before, replays_before, hits, misses, replays;
    int notifications;
    fm5_unwind_statistics(&hits_before, &misses_before, &replays_before, &notifications);
    CHECK_MSG(notifications, "the loader offers no DLL notifications: the cache is not used");
    for (int round = 0; round < 2; round++)
        run_chain("direct, again", shapes, 6);
    fm5_unwind_statistics(&hits, &misses, &replays, &notifications);
    CHECK_MSG(hits > hits_before, "the repeated chain found nothing in the cache (%zu hits, %zu misses)", hits - hits_before,
              misses - misses_before);
    CHECK_MSG(replays > replays_before, "the repeated chain was never replayed from memory");
    tu_info("repeated chains: %zu hits, %zu misses, %zu replays", hits - hits_before, misses - misses_before,
            replays - replays_before);
    /* Each helper twice: the second trace through it is replayed, so a replay of the first helper's
     * walk after the second was loaded at its base would show as a wrong trace. */
    through_helper("frame_helper_a.dll");
    through_helper("frame_helper_b.dll");
    through_helper("frame_helper_a.dll");
}
#endif

int main(void)
{
#ifdef FM5_STATIC
    fm5_initialize();
#endif
    tu_init("test_stack_traces");
    tu_events_install(TU_KEEP_LAST_EVENT);
    CHECK_EQ_INT(FastMM_SetDebugModeStackTraceEntryCount(DEPTH), 0);
    FastMM_EnterDebugMode();

    SECTION("chains of every frame shape, called directly");
    /* Each chain twice in a row from one call site: the second walk from the same first frame is
     * replayed from memory (stack_unwind_windows.c), so both ways are compared with the system's. */
    for (unsigned i = 0; i < 6; i++) {
        link_fn one[1] = { shapes[i] };
        static const char *names[] = { "plain", "large array", "variable array", "saved registers",
                                       "saved xmm registers", "recursion" };
        for (int round = 0; round < 2; round++)
            run_chain(names[i], one, 1);
    }
    for (int round = 0; round < 2; round++)
        run_chain("all shapes", shapes, 6);
    SECTION("a chain called back from msvcrt's qsort");
    through_qsort();
#if defined(FM5_STATIC) && defined(_WIN64)
    cache_and_unloads();
#endif
    tu_info("%lu traces compared", compared_traces);
#if COMPARES_TRACES
#if defined(FM5_STATIC) && defined(_WIN64)
    CHECK_EQ_SIZE(compared_traces, 23); /* 15 chains, 2 repeated, 3 helpers twice: one unwinder comparison each */
#elif !defined(FM5_STATIC)
    CHECK_EQ_SIZE(compared_traces, 90); /* 15 chains: allocation and free traces of 3 families */
#endif
#else
    tu_info("Win32, static build: fm5 takes RtlCaptureStackBackTrace's own traces (the EBP chain) and cannot tell "
            "its own frames from the program's here; the DLL build compares the stored traces");
#endif
    FastMM_ExitDebugMode();
    CHECK_EQ_INT(FastMM_SetDebugModeStackTraceEntryCount(TU_DEBUG_DEFAULT_DEPTH), 0);
    return test_finish();
}
