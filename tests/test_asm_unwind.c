/*
 * test_asm_unwind — a stack trace taken inside fm5, on the way through an asm routine, still reaches the
 * program's code that called it; and (Win64) every asm routine has an unwind-table entry of its own.
 *
 * Built twice (tests/CMakeLists.txt): test_asm_unwind links the DLL, the thing that ships;
 * test_asm_unwind_tables links fm5_static, which reaches the internal asm routines too.
 *   - An event callback captures RtlCaptureStackBackTrace. Small noinline callers call FastMM_FreeMem
 *     and FastMM_ReallocMem with bad pointers (NULL, the stack, interior pointers of small and medium
 *     blocks, a freed small block): the captured trace must hold the return address of that very call.
 *     The call site is pinned down by two probes called just before and just after it, which record their
 *     own return addresses: the frame must lie strictly between them, and they must be close together.
 *     A positive control (a trace captured directly between the probes) proves the method; a negative
 *     control (a trace captured elsewhere) proves the check can fail.
 *   - Debug mode: the allocation trace stored in a block allocated through FastMM_GetMem, the free trace
 *     stored by FastMM_FreeMem and the reallocation's by FastMM_ReallocMem hold their caller's call site;
 *     so does the trace captured in the callback for a double free, a reallocation of a freed block, and
 *     a freed block modified after its free that FastMM_GetMem finds when it reuses the block.
 *   - Win64: RtlLookupFunctionEntry on each asm routine (FastMM_GetMem, FastMM_FreeMem, FastMM_ReallocMem
 *     and, in the static build, fm5_debug_fill_allocated, fm5_debug_fill_freed,
 *     fm5_debug_freed_pattern_intact, the SSE2 checker fm5_debug_freed_pattern_intact_sse2 and the small
 *     move's string copy fm5_small_copy_by_string) at its first byte, a few bytes in and its last byte
 *     finds an entry that begins at the routine's start; and RtlVirtualUnwind from inside the string
 *     copy, the one routine that pushes registers, restores them and its caller's frame.
 *     Win32 has no unwind tables (traces follow the EBP chain): the test says so and checks the traces.
 */
#include "test_util.h"

#ifdef FM5_STATIC
#include "api/startup.h"
#include "api/asm_twins.h"
#include "debug/debug_fill.h"
#include "debug/debug_freed_check.h"
#if FM5_ASM && FM5_SSE2_CHECKER
/* Internal to asm/: the checker jumps to it for large areas. Never called; only its address is used. */
extern void fm5_debug_freed_pattern_intact_sse2(void);
#endif
#if FM5_ASM && defined(__x86_64__)
/* Internal to asm/win64/small_realloc_mem.asm, with a convention of its own; only its address is used. */
extern void fm5_small_copy_by_string(void);
#endif
#define LINKED_WITH "fm5_static"
#else
#define LINKED_WITH "the DLL"
#endif

#define NOINLINE __attribute__((noinline, noclone))
/* The deepest trace RtlCaptureStackBackTrace gives on every Windows version (skip + count < 63). */
#define MAX_FRAMES 62u
/* The two probes around a call are a few instructions apart: the call itself and moving its arguments. */
#define MAX_CALL_SITE_BYTES 128u

/* ------------------------------------------------------------------------------------------------
 * Call sites: the return address of one call, bracketed by the return addresses of two probes
 * ---------------------------------------------------------------------------------------------- */

typedef struct call_site {
    uintptr_t before, after;
} call_site;

static call_site site;

NOINLINE static void probe_before(void)
{
    site.before = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void probe_after(void)
{
    site.after = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
}

static int site_is_plausible(const char *what, call_site s)
{
    return CHECK_MSG(s.before != 0 && s.after > s.before && s.after - s.before <= MAX_CALL_SITE_BYTES,
                     "%s: probes at %p and %p do not bracket one call", what, (void *)s.before, (void *)s.after);
}

/* The index of the frame that is the bracketed call's return address, or -1. */
static int frame_of_site(void *const *frames, unsigned count, call_site s)
{
    for (unsigned i = 0; i < count; i++)
        if ((uintptr_t)frames[i] > s.before && (uintptr_t)frames[i] < s.after)
            return (int)i;
    return -1;
}

static void print_frames(void *const *frames, unsigned count)
{
    for (unsigned i = 0; i < count && i < 24; i++)
        printf("      frame %2u: %p\n", i, frames[i]);
}

/* The check of this test: `frames` holds the call at `s`. */
static int check_trace_holds_site(const char *what, void *const *frames, unsigned count, call_site s)
{
    if (!site_is_plausible(what, s))
        return 0;
    int index = frame_of_site(frames, count, s);
    if (CHECK_MSG(index >= 0, "%s: no frame in (%p, %p) among %u frames", what, (void *)s.before, (void *)s.after,
                  count)) {
        tu_info("%s: the caller is frame %d of %u", what, index, count);
        return 1;
    }
    print_frames(frames, count);
    return 0;
}

/* ------------------------------------------------------------------------------------------------
 * The callback: one trace per event
 * ---------------------------------------------------------------------------------------------- */

static void *event_frames[MAX_FRAMES];
static unsigned event_frame_count;
static volatile LONG event_count;
static int event_kind;

/* Runs inside fm5, maybe with a lock held: it allocates nothing. */
static void FM5_CALL capture_trace(const FastMM_Event *event, void *user)
{
    (void)user;
    event_kind = event->Kind;
    event_frame_count = RtlCaptureStackBackTrace(0, MAX_FRAMES, event_frames, NULL);
    InterlockedIncrement(&event_count);
}

static void forget_events(void)
{
    event_count = 0;
    event_kind = 0;
    event_frame_count = 0;
    memset(event_frames, 0, sizeof event_frames);
}

/* ------------------------------------------------------------------------------------------------
 * The callers. Each brackets exactly one call into fm5 with the probes; the work after the second probe
 * keeps the call from being the function's last (a tail call would leave no return address in it).
 * ---------------------------------------------------------------------------------------------- */

static volatile uintptr_t sink;

NOINLINE static int caller_of_free(void *p)
{
    probe_before();
    int result = FastMM_FreeMem(p);
    probe_after();
    sink += (uintptr_t)result;
    return result;
}

NOINLINE static void *caller_of_realloc(void *p, size_t size)
{
    probe_before();
    void *result = FastMM_ReallocMem(p, size);
    probe_after();
    sink += (uintptr_t)result;
    return result;
}

NOINLINE static void *caller_of_get(size_t size)
{
    probe_before();
    void *result = FastMM_GetMem(size);
    probe_after();
    sink += (uintptr_t)result;
    return result;
}

static void *direct_frames[MAX_FRAMES];
static unsigned direct_frame_count;

NOINLINE static void capture_directly(void)
{
    direct_frame_count = RtlCaptureStackBackTrace(0, MAX_FRAMES, direct_frames, NULL);
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void caller_of_capture(void)
{
    probe_before();
    capture_directly();
    probe_after();
    sink++;
}

/* ------------------------------------------------------------------------------------------------
 * Traces through the release-mode entry points
 * ---------------------------------------------------------------------------------------------- */

static void controls(void)
{
    SECTION("the method: a trace captured between the probes holds the call, one captured elsewhere does not");
    caller_of_capture();
    call_site direct = site;
    check_trace_holds_site("direct capture", direct_frames, direct_frame_count, direct);
    /* Captured outside caller_of_capture: the same check must fail. */
    capture_directly();
    CHECK_MSG(frame_of_site(direct_frames, direct_frame_count, direct) < 0,
              "a trace captured outside the caller passed the check");
}

static void expect_event_trace(const char *what, int expected_kind)
{
    call_site s = site;
    if (!CHECK_MSG(event_count == 1, "%s: %ld events", what, (long)event_count))
        return;
    CHECK_MSG(event_kind == expected_kind, "%s: event %s (%d), expected %s", what, tu_event_kind_name(event_kind),
              event_kind, tu_event_kind_name(expected_kind));
    check_trace_holds_site(what, event_frames, event_frame_count, s);
}

static void free_case(const char *name, void *bad, int kind)
{
    char what[160];
    forget_events();
    int result = caller_of_free(bad);
    snprintf(what, sizeof what, "FastMM_FreeMem(%s)", name);
    CHECK_MSG(result == -1, "%s returned %d", what, result);
    expect_event_trace(what, kind);
}

static void realloc_case(const char *name, void *bad, size_t size, int kind)
{
    char what[160];
    forget_events();
    void *result = caller_of_realloc(bad, size);
    snprintf(what, sizeof what, "FastMM_ReallocMem(%s, %zu)", name, size);
    CHECK_MSG(result == NULL, "%s returned %p", what, result);
    expect_event_trace(what, kind);
}

static void bad_pointer_traces(void)
{
    SECTION("traces from events raised through FastMM_FreeMem and FastMM_ReallocMem");
    uint8_t stack_area[128] __attribute__((aligned(64)));
    memset(stack_area, 0, sizeof stack_area);
    uint8_t *small = (uint8_t *)FastMM_GetMem(100);
    uint8_t *neighbour = (uint8_t *)FastMM_GetMem(100);
    uint8_t *freed = (uint8_t *)FastMM_GetMem(100);
    uint8_t *medium = (uint8_t *)FastMM_GetMem(20000);
    if (!CHECK(small && neighbour && freed && medium))
        return;
    memset(small, 0, 100);
    memset(medium, 0, 20000);
    CHECK_EQ_INT(FastMM_FreeMem(freed), 0);

    struct {
        const char *name;
        void *p;
        int free_kind, realloc_kind;
    } cases[] = {
        {"NULL", NULL, FastMM_EventInvalidFree, FastMM_EventInvalidRealloc},
        {"a stack address", stack_area + 64, FastMM_EventInvalidFree, FastMM_EventInvalidRealloc},
        {"small block + 16", small + 16, FastMM_EventInvalidFree, FastMM_EventInvalidRealloc},
        {"medium block + 64", medium + 64, FastMM_EventInvalidFree, FastMM_EventInvalidRealloc},
        {"a freed small block", freed, FastMM_EventDoubleFree, FastMM_EventReallocOfFreedBlock},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        free_case(cases[i].name, cases[i].p, cases[i].free_kind);
        /* 50 would keep a valid small block in place (the asm fast path); 5000 would move it. */
        realloc_case(cases[i].name, cases[i].p, 50, cases[i].realloc_kind);
        realloc_case(cases[i].name, cases[i].p, 5000, cases[i].realloc_kind);
    }
    FastMM_FreeMem(small);
    FastMM_FreeMem(neighbour);
    FastMM_FreeMem(medium);
}

/* ------------------------------------------------------------------------------------------------
 * Traces in debug mode: stored in the blocks, and captured in the callback
 * ---------------------------------------------------------------------------------------------- */

/* The allocation (free_trace 0) or free trace of a debug block, as stored in its footer. */
static unsigned stored_trace(const void *user, int free_trace, void **frames)
{
    unsigned entries = tu_debug_entry_count(user);
    for (unsigned i = 0; i < entries; i++)
        frames[i] = tu_debug_trace_entry(user, free_trace, i);
    return entries;
}

static void debug_mode_traces(void)
{
    SECTION("traces in debug mode: stored by FastMM_GetMem, FreeMem and ReallocMem, and from their events");
    if (!CHECK_EQ_INT(FastMM_EnterDebugMode(), 1))
        return;
    void *frames[TU_DEBUG_MAXIMUM_DEPTH];

    forget_events();
    uint8_t *p = (uint8_t *)caller_of_get(100);
    call_site allocated_at = site;
    if (CHECK(p != NULL) && CHECK(tu_is_debug_block(p))) {
        check_trace_holds_site("allocation trace stored by FastMM_GetMem", frames, stored_trace(p, 0, frames),
                               allocated_at);

        /* A debug block that moves keeps its allocation trace (FastMM5 does the same); the old block's
         * free trace is the reallocation's. */
        uint8_t *r = (uint8_t *)caller_of_realloc(p, 3000);
        call_site reallocated_at = site;
        if (CHECK(r != NULL) && CHECK(r != p) && CHECK(tu_is_debug_block(r))) {
            check_trace_holds_site("allocation trace kept by FastMM_ReallocMem", frames, stored_trace(r, 0, frames),
                                   allocated_at);
            check_trace_holds_site("free trace of the old block stored by FastMM_ReallocMem", frames,
                                   stored_trace(p, 1, frames), reallocated_at);
            p = r;
        }
        CHECK_EQ_INT(caller_of_free(p), 0);
        call_site freed_at = site;
        /* The freed debug block stays in place in debug mode (FastMM_DebugNeverFreeSmallBlockSpans and
         * FastMM_DebugNeverMergeFreeMediumBlocks are on by default), so its footer can be read. */
        CHECK_MSG(tu_debug_flags(p) == TU_DEBUG_FREED, "flags %u after the free", tu_debug_flags(p));
        check_trace_holds_site("free trace stored by FastMM_FreeMem", frames, stored_trace(p, 1, frames), freed_at);
        CHECK_EQ_INT(event_count, 0);

        free_case("a freed debug block", p, FastMM_EventDoubleFree);
        realloc_case("a freed debug block", p, 50, FastMM_EventReallocOfFreedBlock);
    }

    /* An ordinary block reallocated in debug mode becomes a debug block whose allocation trace is taken
     * inside FastMM_ReallocMem. */
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
    void *ordinary = FastMM_GetMem(100);
    CHECK_EQ_INT(FastMM_EnterDebugMode(), 1);
    if (CHECK(ordinary != NULL) && CHECK(!tu_is_debug_block(ordinary))) {
        uint8_t *r = (uint8_t *)caller_of_realloc(ordinary, 300);
        call_site reallocated_at = site;
        if (CHECK(r != NULL) && CHECK(tu_is_debug_block(r))) {
            check_trace_holds_site("allocation trace of an ordinary block turned debug block by FastMM_ReallocMem",
                                   frames, stored_trace(r, 0, frames), reallocated_at);
            FastMM_FreeMem(r);
        }
    }

    /* A write after free, found when FastMM_GetMem reuses the block: the freed block is at the head of
     * its class, so the next request of the same size takes it and checks it first. */
    uint8_t *victim = (uint8_t *)FastMM_GetMem(200);
    if (CHECK(victim != NULL)) {
        CHECK_EQ_INT(FastMM_FreeMem(victim), 0);
        victim[150] ^= 0x55;
        forget_events();
        void *q = caller_of_get(200);
        CHECK(q != NULL);
        expect_event_trace("FastMM_GetMem reusing a modified freed block", FastMM_EventFreedBlockModified);
        if (q)
            FastMM_FreeMem(q);
    }
    CHECK_EQ_INT(FastMM_ExitDebugMode(), 0);
}

/* ------------------------------------------------------------------------------------------------
 * Unwind tables
 * ---------------------------------------------------------------------------------------------- */

#if TU_64BIT
static void check_unwind_entry(const char *name, uintptr_t address)
{
    DWORD64 image_base = 0;
    PRUNTIME_FUNCTION entry = RtlLookupFunctionEntry((DWORD64)address, &image_base, NULL);
    if (!CHECK_MSG(entry != NULL, "%s at %p: RtlLookupFunctionEntry finds no entry", name, (void *)address))
        return;
    uintptr_t begin = (uintptr_t)image_base + entry->BeginAddress;
    uintptr_t end = (uintptr_t)image_base + entry->EndAddress;
    if (!CHECK_MSG(begin == address && end > address,
                   "%s at %p: the entry found covers [%p, %p) (image base %p)", name, (void *)address, (void *)begin,
                   (void *)end, (void *)(uintptr_t)image_base))
        return;
    tu_info("%s: entry [+0x%lx, +0x%lx), %u bytes, unwind data at +0x%lx", name, (unsigned long)entry->BeginAddress,
            (unsigned long)entry->EndAddress, (unsigned)(end - begin), (unsigned long)entry->UnwindData);
    /* Unwind information starts with its version (1 or 2) in the low three bits. */
    uint8_t version_and_flags = *(const uint8_t *)(uintptr_t)(image_base + entry->UnwindData);
    CHECK_MSG((version_and_flags & 7) == 1 || (version_and_flags & 7) == 2, "%s: unwind data version %u", name,
              version_and_flags & 7u);
    uintptr_t inside[] = {address + 1, address + 2, address + 4, address + 8, end - 1};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        if (inside[i] >= end)
            continue; /* a routine shorter than that: its last byte is probed anyway */
        DWORD64 base = 0;
        PRUNTIME_FUNCTION e = RtlLookupFunctionEntry((DWORD64)inside[i], &base, NULL);
        CHECK_MSG(e != NULL && base == image_base && e->BeginAddress == entry->BeginAddress,
                  "%s + %u: entry %p begins at +0x%lx, expected +0x%lx", name, (unsigned)(inside[i] - address),
                  (void *)e, e ? (unsigned long)e->BeginAddress : 0ul, (unsigned long)entry->BeginAddress);
    }
}

#if defined(FM5_STATIC) && FM5_ASM
/* The one routine with a prologue (routine.inc): RtlVirtualUnwind from its first byte, from between its
 * two pushes, and from its body gives back the return address, the stack pointer and rsi and rdi as the
 * pushes so far left them on a stack made up here. */
static void unwind_through_pushes(void)
{
    uintptr_t address = (uintptr_t)&fm5_small_copy_by_string;
    DWORD64 image_base = 0;
    PRUNTIME_FUNCTION entry = RtlLookupFunctionEntry((DWORD64)address, &image_base, NULL);
    if (!CHECK_MSG(entry != NULL, "fm5_small_copy_by_string: no unwind entry"))
        return;
    const DWORD64 saved_rsi = 0x5151515151515151ull, saved_rdi = 0x7D7D7D7D7D7D7D7Dull;
    const DWORD64 return_address = 0x0000123456789ABCull, live_rsi = 1, live_rdi = 2;
    /* Code offsets: push rsi (1 byte), push rdi (1 byte), then the body (5: after its first move). */
    static const struct {
        unsigned offset, pushed;
    } points[] = {{0, 0}, {1, 1}, {2, 2}, {5, 2}};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        DWORD64 stack[3];
        unsigned depth = 0;
        if (points[i].pushed == 2)
            stack[depth++] = saved_rdi;
        if (points[i].pushed >= 1)
            stack[depth++] = saved_rsi;
        stack[depth] = return_address;
        CONTEXT context;
        memset(&context, 0, sizeof context);
        context.Rip = (DWORD64)(address + points[i].offset);
        context.Rsp = (DWORD64)(uintptr_t)stack;
        context.Rsi = live_rsi;
        context.Rdi = live_rdi;
        void *handler_data = NULL;
        DWORD64 establisher = 0;
        RtlVirtualUnwind(UNW_FLAG_NHANDLER, image_base, context.Rip, entry, &context, &handler_data, &establisher,
                         NULL);
        CHECK_MSG(context.Rip == return_address && context.Rsp == (DWORD64)(uintptr_t)(stack + depth + 1) &&
                      context.Rsi == (points[i].pushed >= 1 ? saved_rsi : live_rsi) &&
                      context.Rdi == (points[i].pushed == 2 ? saved_rdi : live_rdi),
                  "unwinding fm5_small_copy_by_string + %u (%u pushed): rip %llx rsp %+lld rsi %llx rdi %llx",
                  points[i].offset, points[i].pushed, (unsigned long long)context.Rip,
                  (long long)(context.Rsp - (DWORD64)(uintptr_t)stack), (unsigned long long)context.Rsi,
                  (unsigned long long)context.Rdi);
    }
    tu_info("fm5_small_copy_by_string: unwound from %zu points of its prologue and body",
            sizeof points / sizeof points[0]);
}
#endif
#endif

static void unwind_tables(void)
{
    SECTION("unwind-table entries of the asm routines");
#if TU_64BIT
    const struct {
        const char *name;
        uintptr_t address;
    } routines[] = {
        {"FastMM_GetMem", (uintptr_t)&FastMM_GetMem},
        {"FastMM_FreeMem", (uintptr_t)&FastMM_FreeMem},
        {"FastMM_ReallocMem", (uintptr_t)&FastMM_ReallocMem},
#ifdef FM5_STATIC
        {"fm5_debug_fill_allocated", (uintptr_t)&fm5_debug_fill_allocated},
        {"fm5_debug_fill_freed", (uintptr_t)&fm5_debug_fill_freed},
        {"fm5_debug_freed_pattern_intact", (uintptr_t)&fm5_debug_freed_pattern_intact},
#if FM5_ASM && FM5_SSE2_CHECKER
        {"fm5_debug_freed_pattern_intact_sse2", (uintptr_t)&fm5_debug_freed_pattern_intact_sse2},
#endif
#if FM5_ASM
        {"fm5_small_copy_by_string", (uintptr_t)&fm5_small_copy_by_string},
#endif
#endif
    };
    size_t count = sizeof routines / sizeof routines[0];
    for (size_t i = 0; i < count; i++)
        check_unwind_entry(routines[i].name, routines[i].address);
#if defined(FM5_STATIC) && FM5_ASM
    unwind_through_pushes();
#endif
    tu_info("%zu routines looked up (%s build, linked with %s)", count, FM5_ASM ? "NASM" : "pure C", LINKED_WITH);
#ifndef FM5_STATIC
    tu_info("the internal asm routines are looked up by test_asm_unwind_tables, which links fm5_static");
#endif
#else
    tu_info("Win32: x86 has no unwind tables (RtlCaptureStackBackTrace follows the EBP chain there), so there is "
            "nothing to look up; the traces above are this architecture's check");
#endif
}

int main(void)
{
#ifdef FM5_STATIC
    const char *name = "test_asm_unwind_tables";
#else
    const char *name = "test_asm_unwind";
#endif
    tu_init(name);
#ifdef FM5_STATIC
    fm5_initialize();
#endif
    tu_info("%s build, linked with %s", FM5_ASM ? "NASM" : "pure C", LINKED_WITH);
    tu_disable_event_log();
    FastMM_SetEventCallback(capture_trace, NULL);

    controls();
    bad_pointer_traces();
    debug_mode_traces();
    unwind_tables();

    FastMM_SetEventCallback(NULL, NULL);
    return test_finish();
}
