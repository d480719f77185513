/*
 * test_util.h — the small harness shared by fm5's test programs.
 *
 * Every test is one console program: it counts checks, prints each failure with file:line and the
 * values involved, and ends with the line "<name>: N passed, N failed" that CTest's log and the CI
 * summary read. Everything here is `static` so that a test is a single translation unit; functions
 * are `static inline` because a test that does not call one must still compile under -Werror.
 *
 * Include this header first: it selects MinGW's C99 printf (so %zu and %llu mean the same on both
 * architectures) before any C library header is seen.
 */
#ifndef FM5_TEST_UTIL_H
#define FM5_TEST_UTIL_H

#ifndef __USE_MINGW_ANSI_STDIO
#define __USE_MINGW_ANSI_STDIO 1
#endif

#include <windows.h>
#include <stdarg.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm5.h"

#define TU_UNUSED __attribute__((unused))

#if defined(_WIN64)
#define TU_WIN64 1
#define TU_ARCH "win64"
#define TU_DEFAULT_ALIGNMENT 16u
#else
#define TU_WIN64 0
#define TU_ARCH "win32"
#define TU_DEFAULT_ALIGNMENT 8u
#endif

/* ------------------------------------------------------------------------------------------------
 * Check counting and reporting
 * ---------------------------------------------------------------------------------------------- */

/* Worker threads check too, so the counters are updated with Interlocked operations. */
static volatile LONG tu_passed TU_UNUSED;
static volatile LONG tu_failed TU_UNUSED;
/* A test that fails in a loop of a million iterations must not bury the first failures (nor take
 * minutes to print): past this many, failures are still counted but no longer printed. */
static volatile LONG tu_printed_failures TU_UNUSED;
#define TU_MAX_PRINTED_FAILURES 200
static const char *tu_test_name TU_UNUSED = "test";
/* Every test is meant to finish in well under 30 s; CTest's timeout is 300 s. */
#ifndef TU_WATCHDOG_SECONDS
#define TU_WATCHDOG_SECONDS 150
#endif
static inline void tu_start_watchdog(unsigned seconds);

static inline void tu_init(const char *name)
{
    tu_test_name = name;
    /* Under CTest stdout is a pipe, which the CRT buffers fully: a crash or a watchdog kill would
     * then lose the very lines that explain it. */
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    /* A crash must end the test, not wait for a debugger dialog under Wine. */
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX | SEM_NOOPENFILEERRORBOX);
    printf("%s (%s)\n", name, TU_ARCH);
    /* FM5_TEST_WATCHDOG_SECONDS overrides the limit (0 turns it off), e.g. for long manual runs. */
    unsigned seconds = TU_WATCHDOG_SECONDS;
    char value[32];
    DWORD len = GetEnvironmentVariableA("FM5_TEST_WATCHDOG_SECONDS", value, sizeof value);
    if (len > 0 && len < sizeof value)
        seconds = (unsigned)strtoul(value, NULL, 10);
    if (seconds)
        tu_start_watchdog(seconds);
}

static inline int tu_report_failure_allowed(void)
{
    LONG n = InterlockedIncrement(&tu_printed_failures);
    if (n == TU_MAX_PRINTED_FAILURES + 1)
        printf("  ... further failures are counted but not printed\n");
    return n <= TU_MAX_PRINTED_FAILURES;
}

static inline int tu_check(int ok, const char *expr, const char *file, int line)
{
    if (ok) {
        InterlockedIncrement(&tu_passed);
        return 1;
    }
    InterlockedIncrement(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: %s\n", file, line, expr);
    return 0;
}

static inline int tu_check_msg(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
    __attribute__((format(gnu_printf, 5, 6)));
/* Counts a failure and, within the report limit, prints it as "<tag> file:line: expr (message)". */
static inline void tu_vfail(const char *tag, const char *expr, const char *file, int line, const char *fmt,
                            va_list args) __attribute__((format(gnu_printf, 5, 0)));
static inline void tu_vfail(const char *tag, const char *expr, const char *file, int line, const char *fmt,
                            va_list args)
{
    InterlockedIncrement(&tu_failed);
    if (tu_report_failure_allowed()) {
        char text[768];
        vsnprintf(text, sizeof text, fmt, args);
        printf("%s %s:%d: %s (%s)\n", tag, file, line, expr, text);
    }
}

static inline int tu_check_msg(int ok, const char *expr, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        InterlockedIncrement(&tu_passed);
        return 1;
    }
    va_list args;
    va_start(args, fmt);
    tu_vfail("FAIL", expr, file, line, fmt, args);
    va_end(args);
    return 0;
}

static inline int tu_check_eq_u(unsigned long long a, unsigned long long b, const char *ea, const char *eb,
                                const char *file, int line)
{
    if (a == b) {
        InterlockedIncrement(&tu_passed);
        return 1;
    }
    InterlockedIncrement(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: %s == %s (%llu [0x%llx] vs %llu [0x%llx])\n", file, line, ea, eb, a, a, b, b);
    return 0;
}

static inline int tu_check_eq_i(long long a, long long b, const char *ea, const char *eb, const char *file,
                                int line)
{
    if (a == b) {
        InterlockedIncrement(&tu_passed);
        return 1;
    }
    InterlockedIncrement(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: %s == %s (%lld vs %lld)\n", file, line, ea, eb, a, b);
    return 0;
}

static inline int tu_check_eq_p(const void *a, const void *b, const char *ea, const char *eb, const char *file,
                                int line)
{
    if (a == b) {
        InterlockedIncrement(&tu_passed);
        return 1;
    }
    InterlockedIncrement(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: %s == %s (%p vs %p)\n", file, line, ea, eb, a, b);
    return 0;
}

/* Each macro evaluates to 1 when the check passed, so that a test can skip what depends on it. */
#define CHECK(cond) tu_check((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
#define CHECK_MSG(cond, ...) tu_check_msg((cond) ? 1 : 0, #cond, __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_EQ_SIZE(a, b) \
    tu_check_eq_u((unsigned long long)(a), (unsigned long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_INT(a, b) tu_check_eq_i((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_PTR(a, b) \
    tu_check_eq_p((const void *)(a), (const void *)(b), #a, #b, __FILE__, __LINE__)

#define SECTION(title) printf("== %s\n", (title))

static inline void tu_info(const char *fmt, ...) __attribute__((format(gnu_printf, 1, 2)));
static inline void tu_info(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    printf("   ");
    vprintf(fmt, args);
    printf("\n");
    va_end(args);
}

/* Prints the closing line and returns the process exit code. */
static inline int test_finish(void)
{
    LONG passed = tu_passed, failed = tu_failed;
    if (passed == 0 && failed == 0) {
        /* A test that checked nothing has not shown anything: count that as a failure. */
        printf("FAIL: no check ran\n");
        failed = 1;
    }
    printf("%s: %ld passed, %ld failed\n", tu_test_name, (long)passed, (long)failed);
    fflush(stdout);
    return failed ? 1 : 0;
}

/* For a watchdog that found the test stuck: nothing that the stuck threads hold (an fm5 lock, the
 * loader lock) may be needed on the way out, so the process is terminated rather than exited. */
static inline void tu_abort_stuck(const char *what)
{
    InterlockedIncrement(&tu_failed);
    printf("FAIL: %s\n", what);
    printf("%s: %ld passed, %ld failed\n", tu_test_name, (long)tu_passed, (long)tu_failed);
    fflush(stdout);
    TerminateProcess(GetCurrentProcess(), 3);
}

/* A hang (a self-cycle in a free list, a lock never released) must fail the test with a message,
 * well before CTest's own timeout kills it without one. */
static DWORD WINAPI tu_watchdog_thread(LPVOID arg) TU_UNUSED;
static DWORD WINAPI tu_watchdog_thread(LPVOID arg)
{
    DWORD seconds = (DWORD)(uintptr_t)arg;
    Sleep(seconds * 1000);
    char what[128];
    snprintf(what, sizeof what, "watchdog: %s still running after %lu s (hang or deadlock)", tu_test_name,
             (unsigned long)seconds);
    tu_abort_stuck(what);
    return 0;
}

static inline void tu_start_watchdog(unsigned seconds)
{
    HANDLE h = CreateThread(NULL, 64 * 1024, tu_watchdog_thread, (LPVOID)(uintptr_t)seconds, 0, NULL);
    if (h)
        CloseHandle(h);
}

/* ------------------------------------------------------------------------------------------------
 * Deterministic pseudo-random numbers: splitmix64 to spread the seed, xorshift64* to generate
 * ---------------------------------------------------------------------------------------------- */

typedef struct tu_rng {
    uint64_t state;
} tu_rng;

static inline uint64_t tu_splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static inline void tu_rng_seed(tu_rng *r, uint64_t seed)
{
    r->state = tu_splitmix64(seed);
    if (r->state == 0) /* xorshift never leaves zero */
        r->state = 0x2545F4914F6CDD1Dull;
}

static inline uint64_t tu_rng_next(tu_rng *r)
{
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n); n > 0. The modulo bias (below 2^-40 for the ranges used here) is irrelevant. */
static inline uint64_t tu_rng_below(tu_rng *r, uint64_t n)
{
    return (tu_rng_next(r) >> 11) % n;
}

/* Uniform in [lo, hi]. */
static inline size_t tu_rng_range(tu_rng *r, size_t lo, size_t hi)
{
    return lo + (size_t)tu_rng_below(r, (uint64_t)(hi - lo) + 1);
}

/* Log-uniform in [lo, hi], lo >= 1: most sizes are near lo, as in real programs, while every
 * magnitude up to hi still comes up. */
static inline size_t tu_rng_log_range(tu_rng *r, size_t lo, size_t hi)
{
    double u = (double)(tu_rng_next(r) >> 11) / 9007199254740992.0; /* [0, 1) */
    double v = (double)lo * exp(u * log((double)hi / (double)lo));
    size_t s = (size_t)v;
    if (s < lo)
        s = lo;
    if (s > hi)
        s = hi;
    return s;
}

/* ------------------------------------------------------------------------------------------------
 * Content patterns
 *
 * Byte i of a block filled with key k is byte (i % 8) of the little-endian word k + (i / 8) * C, C odd.
 * A byte written by anyone else, or a block that overlaps another live block, or a copy that moved
 * the wrong bytes shows up as a mismatch, and the word form keeps fill and verify at memory speed:
 * tests fill and verify gigabytes.
 * ---------------------------------------------------------------------------------------------- */

#define TU_PATTERN_STEP 0x9E3779B97F4A7C15ull

static inline uint64_t tu_pattern_key(uint64_t seed, uint64_t slot, uint64_t generation)
{
    return tu_splitmix64(seed ^ tu_splitmix64(slot * 0x100000001B3ull + generation));
}

static inline uint8_t tu_pattern_byte(uint64_t key, size_t offset)
{
    uint64_t w = key + (uint64_t)(offset / 8) * TU_PATTERN_STEP;
    return (uint8_t)(w >> (8 * (offset % 8)));
}

/* Fills bytes [from, to) of the block with the pattern of `key`, by absolute offset. */
static inline void tu_pattern_fill_range(void *block, size_t from, size_t to, uint64_t key)
{
    uint8_t *p = (uint8_t *)block;
    size_t i = from;
    while (i < to && (i % 8) != 0) {
        p[i] = tu_pattern_byte(key, i);
        i++;
    }
    uint64_t w = key + (uint64_t)(i / 8) * TU_PATTERN_STEP;
    for (; i + 8 <= to; i += 8) {
        memcpy(p + i, &w, 8); /* the block itself may be only 2-aligned relative to i */
        w += TU_PATTERN_STEP;
    }
    for (; i < to; i++)
        p[i] = tu_pattern_byte(key, i);
}

static inline void tu_pattern_fill(void *block, size_t size, uint64_t key)
{
    tu_pattern_fill_range(block, 0, size, key);
}

/* Returns the offset of the first byte in [from, to) that does not hold the pattern, or SIZE_MAX. */
static inline size_t tu_pattern_find_mismatch(const void *block, size_t from, size_t to, uint64_t key)
{
    const uint8_t *p = (const uint8_t *)block;
    size_t i = from;
    while (i < to && (i % 8) != 0) {
        if (p[i] != tu_pattern_byte(key, i))
            return i;
        i++;
    }
    uint64_t w = key + (uint64_t)(i / 8) * TU_PATTERN_STEP;
    for (; i + 8 <= to; i += 8) {
        uint64_t got;
        memcpy(&got, p + i, 8);
        if (got != w) {
            for (size_t j = i; j < i + 8; j++)
                if (p[j] != tu_pattern_byte(key, j))
                    return j;
        }
        w += TU_PATTERN_STEP;
    }
    for (; i < to; i++)
        if (p[i] != tu_pattern_byte(key, i))
            return i;
    return SIZE_MAX;
}

/* A check that names the first bad byte, its value and the expected one. */
#define CHECK_PATTERN_RANGE(block, from, to, key)                                                        \
    tu_check_pattern((const void *)(block), (size_t)(from), (size_t)(to), (uint64_t)(key), #block, \
                     __FILE__, __LINE__)
#define CHECK_PATTERN(block, size, key) CHECK_PATTERN_RANGE(block, 0, size, key)

static inline int tu_check_pattern(const void *block, size_t from, size_t to, uint64_t key, const char *expr,
                                   const char *file, int line)
{
    size_t bad = tu_pattern_find_mismatch(block, from, to, key);
    if (bad == SIZE_MAX) {
        InterlockedIncrement(&tu_passed);
        return 1;
    }
    InterlockedIncrement(&tu_failed);
    if (tu_report_failure_allowed())
        printf("FAIL %s:%d: pattern of %s=%p in [%zu, %zu): byte %zu is 0x%02x, expected 0x%02x\n", file, line,
               expr, block, from, to, bad, ((const uint8_t *)block)[bad], tu_pattern_byte(key, bad));
    return 0;
}

static inline int tu_all_bytes_equal(const void *block, size_t size, uint8_t value, size_t *first_bad)
{
    const uint8_t *p = (const uint8_t *)block;
    for (size_t i = 0; i < size; i++) {
        if (p[i] != value) {
            if (first_bad)
                *first_bad = i;
            return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------------
 * Event recorder
 * ---------------------------------------------------------------------------------------------- */

#define TU_EVENT_KINDS 16
#define TU_EVENT_TEXT 1024

typedef struct tu_event_log {
    volatile LONG count[TU_EVENT_KINDS];
    volatile LONG total;
    /* The last event is several fields, so a spin lock keeps a reader from seeing half of one. */
    volatile LONG lock;
    int last_kind;
    const void *last_pointer;
    size_t last_size;
    char last_text[TU_EVENT_TEXT];
} tu_event_log;

static tu_event_log tu_events TU_UNUSED;

/* Copies as much of `src` as fits, always terminated; NULL copies as "". */
static inline void tu_copy_text(char *dst, size_t dst_size, const char *src)
{
    size_t n = src ? strnlen(src, dst_size - 1) : 0;
    if (n)
        memcpy(dst, src, n);
    dst[n] = 0;
}

static inline void tu_events_lock(void)
{
    while (InterlockedCompareExchange(&tu_events.lock, 1, 0) != 0)
        SwitchToThread();
}

static inline void tu_events_unlock(void)
{
    InterlockedExchange(&tu_events.lock, 0);
}

/* Runs inside fm5, possibly with an arena lock held: it must not allocate from fm5, and does not
 * allocate at all. */
TU_UNUSED static void FM5_CALL tu_event_callback(const FastMM_Event *event, void *user)
{
    (void)user;
    int kind = event->Kind;
    if (kind >= 0 && kind < TU_EVENT_KINDS)
        InterlockedIncrement(&tu_events.count[kind]);
    else
        InterlockedIncrement(&tu_events.count[0]); /* an unknown kind is itself worth a check */
    tu_events_lock();
    tu_events.last_kind = kind;
    tu_events.last_pointer = event->Pointer;
    tu_events.last_size = event->Size;
    tu_copy_text(tu_events.last_text, TU_EVENT_TEXT, event->Text);
    tu_events_unlock();
    InterlockedIncrement(&tu_events.total);
}

static inline void tu_events_reset(void)
{
    tu_events_lock();
    for (int i = 0; i < TU_EVENT_KINDS; i++)
        InterlockedExchange(&tu_events.count[i], 0);
    InterlockedExchange(&tu_events.total, 0);
    tu_events.last_kind = 0;
    tu_events.last_pointer = NULL;
    tu_events.last_size = 0;
    tu_events.last_text[0] = 0;
    tu_events_unlock();
}

/* Tests run unattended: events go to the recorder, not to a log file beside the executable nor to
 * the debugger channel. */
static inline void tu_disable_event_log(void)
{
    FastMM_SetLogToFileEvents(0);
    FastMM_SetOutputDebugStringEvents(0);
}

static inline void tu_events_install(void)
{
    tu_disable_event_log();
    tu_events_reset();
    FastMM_SetEventCallback(tu_event_callback, NULL);
}

static inline LONG tu_events_count(int kind)
{
    return (kind >= 0 && kind < TU_EVENT_KINDS) ? tu_events.count[kind] : 0;
}

static inline LONG tu_events_total(void)
{
    return tu_events.total;
}

/* Copies the last event out under the lock. */
static inline void tu_events_last(int *kind, const void **pointer, size_t *size, char *text, size_t text_size)
{
    tu_events_lock();
    if (kind)
        *kind = tu_events.last_kind;
    if (pointer)
        *pointer = tu_events.last_pointer;
    if (size)
        *size = tu_events.last_size;
    if (text && text_size)
        tu_copy_text(text, text_size, tu_events.last_text);
    tu_events_unlock();
}

/* Whether `text` holds the hexadecimal digits of `value`, in either case and with any zero padding:
 * fm5 may print 0x0000ABCD, ABCD or abcd. */
static inline int tu_text_mentions_hex(const char *text, uintptr_t value)
{
    char lower[2 * sizeof(uintptr_t) + 1], upper[2 * sizeof(uintptr_t) + 1];
    snprintf(lower, sizeof lower, "%llx", (unsigned long long)value);
    snprintf(upper, sizeof upper, "%llX", (unsigned long long)value);
    return strstr(text, lower) != NULL || strstr(text, upper) != NULL;
}

static inline const char *tu_event_kind_name(int kind)
{
    switch (kind) {
    case FastMM_EventInvalidFree: return "InvalidFree";
    case FastMM_EventInvalidRealloc: return "InvalidRealloc";
    case FastMM_EventDoubleFree: return "DoubleFree";
    case FastMM_EventReallocOfFreedBlock: return "ReallocOfFreedBlock";
    case FastMM_EventInvalidQuery: return "InvalidQuery";
    case FastMM_EventOutOfMemory: return "OutOfMemory";
    case FastMM_EventMemoryLimitExceeded: return "MemoryLimitExceeded";
    case FastMM_EventInvalidArgument: return "InvalidArgument";
    default: return "?";
    }
}

/* ------------------------------------------------------------------------------------------------
 * Expected sizes (FastMM5's tables)
 * ---------------------------------------------------------------------------------------------- */

#define TU_MAX_SMALL_USER 2622u
#define TU_MIN_MEDIUM_USER 2623u
#define TU_MAX_MEDIUM_USER 558904u
#define TU_MIN_LARGE_USER 558905u
#define TU_SMALL_HEADER 2u
#define TU_MEDIUM_HEADER 8u
#define TU_LARGE_HEADER 64u
#define TU_MEDIUM_BIN_COUNT 1024u

static const unsigned short tu_small_classes[] TU_UNUSED = {
#if !TU_WIN64
    8, 24, 40, 56, 72, 88, 104, 120, 136, 152, /* the x86-only sizes, merged below by sorting */
#endif
    16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 272, 288, 304, 320,
    352, 384, 416, 448, 480, 512, 544, 576, 608, 640,
    704, 768, 832, 896, 960, 1024, 1088, 1152, 1216, 1280, 1344,
    1472, 1600, 1728, 1856, 1984, 2112, 2240, 2368, 2496, 2624};
#define TU_SMALL_CLASS_COUNT (sizeof tu_small_classes / sizeof tu_small_classes[0])

/* Block size (header included) of the small block that serves `n` bytes when blocks must be
 * `alignment`-aligned: the smallest class that holds n + 2 and is a multiple of the alignment. */
static inline size_t tu_small_block_size(size_t n, unsigned alignment)
{
    size_t best = 0;
    for (size_t i = 0; i < TU_SMALL_CLASS_COUNT; i++) {
        size_t c = tu_small_classes[i];
        if (c >= n + TU_SMALL_HEADER && c % alignment == 0 && (best == 0 || c < best))
            best = c;
    }
    return best;
}

/* The alignment FastMM5's layout gives a small block of this size: the largest power of two up to
 * 64 that divides it, and never less than the minimum alignment in force. */
static inline size_t tu_small_natural_alignment(size_t block_size, unsigned minimum_alignment)
{
    size_t a = 64;
    while (a > 1 && block_size % a != 0)
        a /= 2;
    return a < minimum_alignment ? minimum_alignment : a;
}

/* The i-th medium bin size, i in [0, 1024). */
static inline size_t tu_medium_bin(size_t i)
{
    if (i < 384)
        return 2880 + 256 * i;
    if (i < 768)
        return 101184 + 512 * (i - 384);
    return 297792 + 1024 * (i - 768);
}

/* Block size (8-byte header included) of the medium block that serves `n` bytes. */
static inline size_t tu_medium_block_size(size_t n)
{
    size_t b = n + TU_MEDIUM_HEADER;
    if (b <= 2880)
        return 2880;
    if (b <= 101184)
        return 2880 + (b - 2880 + 255) / 256 * 256;
    if (b <= 297792)
        return 101184 + (b - 101184 + 511) / 512 * 512;
    return 297792 + (b - 297792 + 1023) / 1024 * 1024;
}

static inline size_t tu_large_usable(size_t n)
{
    return (n + TU_LARGE_HEADER + 65535) / 65536 * 65536 - TU_LARGE_HEADER;
}

/* What FastMM_BlockMaximumUserBytes must say for a fresh block of `n` bytes. */
static inline size_t tu_expected_usable(size_t n, unsigned alignment)
{
    if (n <= TU_MAX_SMALL_USER)
        return tu_small_block_size(n, alignment) - TU_SMALL_HEADER;
    if (n <= TU_MAX_MEDIUM_USER)
        return tu_medium_block_size(n) - TU_MEDIUM_HEADER;
    return tu_large_usable(n);
}

static inline unsigned tu_expected_kind(size_t n)
{
    if (n <= TU_MAX_SMALL_USER)
        return FastMM_SmallBlock;
    if (n <= TU_MAX_MEDIUM_USER)
        return FastMM_MediumBlock;
    return FastMM_LargeBlock;
}

static inline const char *tu_kind_name(unsigned kind)
{
    switch (kind) {
    case FastMM_SmallBlock: return "small";
    case FastMM_MediumBlock: return "medium";
    case FastMM_LargeBlock: return "large";
    case FastMM_SmallBlockSpan: return "small-span";
    case FastMM_MediumBlockSpan: return "medium-span";
    default: return "?";
    }
}

static inline int tu_is_aligned(const void *p, size_t alignment)
{
    return ((uintptr_t)p & (alignment - 1)) == 0;
}

/* ------------------------------------------------------------------------------------------------
 * Block walk snapshots: walk once, then look addresses up with a binary search
 * ---------------------------------------------------------------------------------------------- */

typedef struct tu_walk {
    FastMM_WalkBlockInfo *items;
    size_t count;
    size_t capacity;
    int out_of_memory;
    int result; /* what FastMM_WalkBlocks returned */
} tu_walk;

/* Runs with an fm5 arena lock held: grows the array with the CRT heap, never with fm5. */
TU_UNUSED static int FM5_CALL tu_walk_collect(const FastMM_WalkBlockInfo *info, void *user)
{
    tu_walk *w = (tu_walk *)user;
    if (w->count == w->capacity) {
        size_t capacity = w->capacity ? w->capacity * 2 : 4096;
        FastMM_WalkBlockInfo *items = (FastMM_WalkBlockInfo *)realloc(w->items, capacity * sizeof *items);
        if (!items) {
            w->out_of_memory = 1;
            return 1;
        }
        w->items = items;
        w->capacity = capacity;
    }
    w->items[w->count++] = *info;
    return 0;
}

TU_UNUSED static int tu_walk_compare(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const FastMM_WalkBlockInfo *)a)->Address;
    uintptr_t y = (uintptr_t)((const FastMM_WalkBlockInfo *)b)->Address;
    return x < y ? -1 : x > y;
}

/* Snapshot of the blocks of `kinds` (only block kinds, so that addresses are unique), sorted. */
static inline void tu_walk_take(tu_walk *w, unsigned kinds, int used_only)
{
    memset(w, 0, sizeof *w);
    w->result = FastMM_WalkBlocks(tu_walk_collect, w, kinds, used_only, 10000);
    if (w->count > 1)
        qsort(w->items, w->count, sizeof *w->items, tu_walk_compare);
}

static inline void tu_walk_free(tu_walk *w)
{
    free(w->items);
    memset(w, 0, sizeof *w);
}

static inline const FastMM_WalkBlockInfo *tu_walk_find(const tu_walk *w, const void *address)
{
    size_t lo = 0, hi = w->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uintptr_t a = (uintptr_t)w->items[mid].Address;
        if (a == (uintptr_t)address)
            return &w->items[mid];
        if (a < (uintptr_t)address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

#define TU_BLOCK_KINDS (FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock)

/* Counts used blocks of every kind; with the allocated byte count it is a test's baseline. */
static inline size_t tu_used_block_count(void)
{
    tu_walk w;
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    size_t n = w.count;
    tu_walk_free(&w);
    return n;
}

static inline size_t tu_allocated_bytes(void)
{
    FastMM_UsageSummary s;
    memset(&s, 0, sizeof s);
    FastMM_GetUsageSummary(&s);
    return s.AllocatedBytes;
}

/* Sorts an array of pointers; used to find duplicates (a block handed out twice). */
TU_UNUSED static int tu_pointer_compare(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

/* Returns how many pointers in p[0..n) equal an earlier one (after sorting p in place). */
static inline size_t tu_count_duplicates(void **p, size_t n)
{
    size_t dup = 0;
    qsort(p, n, sizeof *p, tu_pointer_compare);
    for (size_t i = 1; i < n; i++)
        if (p[i] && p[i] == p[i - 1])
            dup++;
    return dup;
}

/* ------------------------------------------------------------------------------------------------
 * Medium-block layout helper
 *
 * Some rules (in-place growth, double-free detection) are only promised when a block's neighbour is
 * in a known state. Rather than guessing how fm5 lays blocks out, a test allocates a few blocks and
 * asks the walk which of them are adjacent.
 * ---------------------------------------------------------------------------------------------- */

#define TU_CHAIN_POOL 16

typedef struct tu_medium_chain {
    void *pool[TU_CHAIN_POOL]; /* every block allocated for the search; chain members included */
    size_t pool_count;
    void *first, *middle, *last; /* first is followed directly by middle, middle by last */
    size_t first_block_size, middle_block_size;
} tu_medium_chain;

/* Allocates medium blocks of `size` until three are adjacent in memory, in address order.
 * Returns 1 when found. The caller frees the pool with tu_medium_chain_release. */
static inline int tu_medium_chain_make(tu_medium_chain *c, size_t size)
{
    memset(c, 0, sizeof *c);
    for (size_t round = 0; round < TU_CHAIN_POOL; round++) {
        void *p = FastMM_GetMem(size);
        if (!p)
            return 0;
        c->pool[c->pool_count++] = p;
        if (c->pool_count < 3)
            continue;
        tu_walk w;
        tu_walk_take(&w, FastMM_MediumBlock, 0);
        int found = 0;
        for (size_t i = 0; i < c->pool_count && !found; i++) {
            const FastMM_WalkBlockInfo *a = tu_walk_find(&w, c->pool[i]);
            if (!a)
                continue;
            const uint8_t *next = (const uint8_t *)a->Address + a->BlockSize;
            for (size_t j = 0; j < c->pool_count && !found; j++) {
                if (c->pool[j] != next)
                    continue;
                const FastMM_WalkBlockInfo *b = tu_walk_find(&w, c->pool[j]);
                if (!b)
                    continue;
                const uint8_t *after = (const uint8_t *)b->Address + b->BlockSize;
                for (size_t k = 0; k < c->pool_count; k++) {
                    if (c->pool[k] == after) {
                        c->first = c->pool[i];
                        c->middle = c->pool[j];
                        c->last = c->pool[k];
                        c->first_block_size = a->BlockSize;
                        c->middle_block_size = b->BlockSize;
                        found = 1;
                        break;
                    }
                }
            }
        }
        tu_walk_free(&w);
        if (found)
            return 1;
    }
    return 0;
}

/* Frees every pool block except those set to NULL by the caller (freed or moved already). */
static inline void tu_medium_chain_release(tu_medium_chain *c)
{
    for (size_t i = 0; i < c->pool_count; i++)
        if (c->pool[i])
            FastMM_FreeMem(c->pool[i]);
    c->pool_count = 0;
}

/* Marks a pool entry as no longer owned by the pool (freed, or replaced by a realloc). */
static inline void tu_medium_chain_forget(tu_medium_chain *c, void *p)
{
    for (size_t i = 0; i < c->pool_count; i++)
        if (c->pool[i] == p)
            c->pool[i] = NULL;
}

/* ------------------------------------------------------------------------------------------------
 * Holding an arena lock from a helper thread
 *
 * FastMM_WalkBlocks calls its callback with the lock of the arena being walked held. A helper thread
 * walks the given kinds and, on reaching the target block, signals `on_target` and parks until
 * `release` is set: meanwhile the arena that owns the target is locked, so frees of its blocks must
 * take the pending-free path. Parking only on the target (not on any block) pins the right arena.
 * ---------------------------------------------------------------------------------------------- */

typedef struct tu_lock_holder {
    const void *target;
    unsigned kinds;
    HANDLE on_target;
    HANDLE release;
    HANDLE thread;
    volatile LONG reached;
    volatile LONG walk_result;
} tu_lock_holder;

TU_UNUSED static int FM5_CALL tu_lock_holder_callback(const FastMM_WalkBlockInfo *info, void *user)
{
    tu_lock_holder *h = (tu_lock_holder *)user;
    if (info->Address != h->target)
        return 0;
    InterlockedExchange(&h->reached, 1);
    SetEvent(h->on_target);
    /* Bounded, so that a test whose main thread got stuck cannot keep the lock forever. */
    WaitForSingleObject(h->release, 30000);
    return 1;
}

TU_UNUSED static DWORD WINAPI tu_lock_holder_thread(LPVOID arg)
{
    tu_lock_holder *h = (tu_lock_holder *)arg;
    LONG r = FastMM_WalkBlocks(tu_lock_holder_callback, h, h->kinds, 0, 10000);
    InterlockedExchange(&h->walk_result, r);
    /* If the walk never reached the target, wake the main thread anyway so that it does not wait for
     * the whole timeout; it tells the two cases apart by `reached`. */
    SetEvent(h->on_target);
    return 0;
}

/* Starts the helper; returns 1 once it holds the lock of the arena that owns `target`. */
static inline int tu_lock_holder_start(tu_lock_holder *h, const void *target, unsigned kinds)
{
    memset(h, 0, sizeof *h);
    h->target = target;
    h->kinds = kinds;
    h->on_target = CreateEventA(NULL, TRUE, FALSE, NULL);
    h->release = CreateEventA(NULL, TRUE, FALSE, NULL);
    if (!h->on_target || !h->release)
        return 0;
    h->thread = CreateThread(NULL, 0, tu_lock_holder_thread, h, 0, NULL);
    if (!h->thread)
        return 0;
    WaitForSingleObject(h->on_target, 20000);
    return h->reached != 0;
}

/* Lets the helper go and waits for it. Returns 1 when it finished in time. */
static inline int tu_lock_holder_stop(tu_lock_holder *h)
{
    int ok = 1;
    if (h->release)
        SetEvent(h->release);
    if (h->thread) {
        ok = WaitForSingleObject(h->thread, 30000) == WAIT_OBJECT_0;
        CloseHandle(h->thread);
    }
    if (h->on_target)
        CloseHandle(h->on_target);
    if (h->release)
        CloseHandle(h->release);
    h->thread = h->on_target = h->release = NULL;
    return ok;
}

/* ------------------------------------------------------------------------------------------------
 * Miscellaneous
 * ---------------------------------------------------------------------------------------------- */

/* argv[i] as a positive count, or `fallback`. */
static inline unsigned long long tu_arg_count(int argc, char **argv, int i, unsigned long long fallback)
{
    if (argc > i && argv[i] && argv[i][0]) {
        char *end = NULL;
        unsigned long long v = strtoull(argv[i], &end, 0);
        if (end && *end == 0 && v > 0)
            return v;
    }
    return fallback;
}

/* Milliseconds since some point; only for progress messages, never for assertions. */
static inline unsigned long long tu_ms(void)
{
    return (unsigned long long)GetTickCount64();
}

/* ------------------------------------------------------------------------------------------------
 * Debug blocks, as fm5.h and FastMM5 lay them out
 *
 * The tests' own reading of the layout, written from the specification rather than taken from
 * src/debug_block.h, so that a field that moves there shows up here as a failure:
 *     header (64 bytes, at user - 64) | user data | footer (unaligned):
 *     u32 checksum | allocation trace [N pointers] | free trace [N pointers] | u32 reserved
 * ---------------------------------------------------------------------------------------------- */

#define TU_DEBUG_HEADER_SIZE 64u
#if TU_WIN64
#define TU_DEBUG_CHECKSUM_OFFSET 20u
#define TU_DEBUG_TICK_OFFSET 24u
#define TU_DEBUG_NUMBER_OFFSET 28u
#define TU_DEBUG_USER_SIZE_OFFSET 32u
#define TU_DEBUG_PREVIOUS_CLASS_OFFSET 40u
#else
#define TU_DEBUG_CHECKSUM_OFFSET 28u
#define TU_DEBUG_TICK_OFFSET 32u
#define TU_DEBUG_NUMBER_OFFSET 36u
#define TU_DEBUG_USER_SIZE_OFFSET 40u
#define TU_DEBUG_PREVIOUS_CLASS_OFFSET 44u
#endif
#define TU_DEBUG_GROUP_OFFSET 48u
#define TU_DEBUG_ALLOCATED_BY_OFFSET 52u
#define TU_DEBUG_FREED_BY_OFFSET 56u
#define TU_DEBUG_ENTRY_COUNT_OFFSET 61u
#define TU_DEBUG_FLAGS_OFFSET 62u

#define TU_DEBUG_IN_USE 32u  /* the flags, which are also the status word before the user pointer */
#define TU_DEBUG_FREED 33u
#define TU_DEBUG_ALLOCATED_FILL 0x90u
#define TU_DEBUG_FREED_FILL 0x80u
/* A freed block at least this big gets the freed-object marker in its first pointer. */
#define TU_DEBUG_FREED_OBJECT_MINIMUM_SIZE (2u * (unsigned)sizeof(void *))
#define TU_DEBUG_DEFAULT_DEPTH 20u
#define TU_DEBUG_MAXIMUM_DEPTH 64u
#define TU_DEBUG_DEFAULT_OPTIONS (FastMM_DebugNeverFreeSmallBlockSpans | FastMM_DebugNeverMergeFreeMediumBlocks)

static inline uint8_t *tu_debug_header(const void *user)
{
    return (uint8_t *)user - TU_DEBUG_HEADER_SIZE;
}

/* Header fields are read and written through memcpy: a test also points these at corrupted blocks. */
static inline uint32_t tu_debug_header_u32(const void *user, unsigned offset)
{
    uint32_t v;
    memcpy(&v, tu_debug_header(user) + offset, sizeof v);
    return v;
}

static inline void tu_debug_set_header_u32(void *user, unsigned offset, uint32_t v)
{
    memcpy(tu_debug_header(user) + offset, &v, sizeof v);
}

static inline size_t tu_debug_user_size(const void *user)
{
    size_t v;
    memcpy(&v, tu_debug_header(user) + TU_DEBUG_USER_SIZE_OFFSET, sizeof v);
    return v;
}

static inline unsigned tu_debug_entry_count(const void *user)
{
    return tu_debug_header(user)[TU_DEBUG_ENTRY_COUNT_OFFSET];
}

static inline unsigned tu_debug_flags(const void *user)
{
    uint16_t v;
    memcpy(&v, tu_debug_header(user) + TU_DEBUG_FLAGS_OFFSET, sizeof v);
    return v;
}

/* The 16-bit status word fm5 keeps before every block it hands out. */
static inline unsigned tu_status_word(const void *p)
{
    uint16_t v;
    memcpy(&v, (const uint8_t *)p - 2, sizeof v);
    return v;
}

/* A live debug block: its status word is the debug sub-block value (no other block kind has it). */
static inline int tu_is_debug_block(const void *p)
{
    return tu_status_word(p) == TU_DEBUG_IN_USE;
}

static inline const void *tu_debug_previous_class(const void *user)
{
    const void *v;
    memcpy(&v, tu_debug_header(user) + TU_DEBUG_PREVIOUS_CLASS_OFFSET, sizeof v);
    return v;
}

/* 0xFFFFFFFF XOR every 32-bit word after the checksum field up to the end of the header. */
static inline uint32_t tu_debug_expected_header_checksum(const void *user)
{
    uint32_t sum = 0xFFFFFFFFu;
    for (unsigned offset = TU_DEBUG_CHECKSUM_OFFSET + 4; offset < TU_DEBUG_HEADER_SIZE; offset += 4)
        sum ^= tu_debug_header_u32(user, offset);
    return sum;
}

static inline uint8_t *tu_debug_footer(const void *user)
{
    return (uint8_t *)user + tu_debug_user_size(user);
}

static inline size_t tu_debug_footer_size(unsigned entries)
{
    return 2u * (size_t)entries * sizeof(void *) + 8u;
}

static inline uint32_t tu_debug_stored_footer_checksum(const void *user)
{
    uint32_t v;
    memcpy(&v, tu_debug_footer(user), sizeof v);
    return v;
}

/* 0xFFFFFFFF XOR the 32-bit words of both stack traces. */
static inline uint32_t tu_debug_expected_footer_checksum(const void *user)
{
    const uint8_t *traces = tu_debug_footer(user) + 4;
    size_t bytes = 2u * (size_t)tu_debug_entry_count(user) * sizeof(void *);
    uint32_t sum = 0xFFFFFFFFu;
    for (size_t offset = 0; offset < bytes; offset += 4) {
        uint32_t word;
        memcpy(&word, traces + offset, sizeof word);
        sum ^= word;
    }
    return sum;
}

/* Entry `index` of the allocation trace (free_trace 0) or the free trace (free_trace 1). */
static inline void *tu_debug_trace_entry(const void *user, int free_trace, unsigned index)
{
    unsigned entries = tu_debug_entry_count(user);
    void *v;
    memcpy(&v, tu_debug_footer(user) + 4 + ((size_t)(free_trace ? entries : 0) + index) * sizeof(void *), sizeof v);
    return v;
}

/* Whether both stored checksums match the header and footer as they are. */
static inline int tu_debug_checksums_match(const void *user)
{
    return tu_debug_header_u32(user, TU_DEBUG_CHECKSUM_OFFSET) == tu_debug_expected_header_checksum(user) &&
           tu_debug_stored_footer_checksum(user) == tu_debug_expected_footer_checksum(user);
}

/* The byte a freed block of `size` bytes must hold at `offset`, given the freed-object marker: the
 * marker's bytes in its first pointer when the block is big enough, 0x80 everywhere else (on Win32 the
 * second dword of the 8-byte slot is fill too). */
static inline uint8_t tu_debug_freed_byte(size_t size, size_t offset, const void *marker)
{
    if (size >= TU_DEBUG_FREED_OBJECT_MINIMUM_SIZE && offset < sizeof(void *)) {
        uint8_t bytes[sizeof(void *)];
        memcpy(bytes, &marker, sizeof bytes);
        return bytes[offset];
    }
    return (uint8_t)TU_DEBUG_FREED_FILL;
}

/* The first offset of a freed block that does not hold the freed pattern, or SIZE_MAX. */
static inline size_t tu_debug_freed_mismatch(const void *user, size_t size, const void *marker)
{
    const uint8_t *p = (const uint8_t *)user;
    for (size_t i = 0; i < size; i++)
        if (p[i] != tu_debug_freed_byte(size, i, marker))
            return i;
    return SIZE_MAX;
}

/* ------------------------------------------------------------------------------------------------
 * Event capture: every event with its whole text
 *
 * The recorder above keeps the last event's first 1 KB; a debug-block report (stack traces and a
 * 256-byte dump) is longer, and a scan reports many blocks at once. The capture keeps up to
 * TU_CAPTURE_MAX_EVENTS events and their texts in memory taken from the OS (never from fm5, and not
 * at all until a test installs it), and still feeds the recorder, so tu_events_count() and the rest
 * keep working.
 * ---------------------------------------------------------------------------------------------- */

#define TU_CAPTURE_MAX_EVENTS 8192u
#define TU_CAPTURE_TEXT_BYTES (24u * 1024u * 1024u)

typedef struct tu_captured_event {
    int kind;
    const void *pointer;
    size_t size;
    const char *text; /* NUL-terminated; cut short only when the text store is full */
} tu_captured_event;

typedef struct tu_capture_store {
    tu_captured_event *events;
    char *text;
    volatile LONG count;   /* events stored */
    volatile LONG dropped; /* events that found the store full */
    size_t text_used;
    volatile LONG lock;
} tu_capture_store;

static tu_capture_store tu_capture TU_UNUSED;

/* Runs inside fm5, possibly with an arena lock held: it allocates nothing. */
TU_UNUSED static void FM5_CALL tu_capture_callback(const FastMM_Event *event, void *user)
{
    tu_event_callback(event, user);
    while (InterlockedCompareExchange(&tu_capture.lock, 1, 0) != 0)
        SwitchToThread();
    if (tu_capture.events && (ULONG)tu_capture.count < TU_CAPTURE_MAX_EVENTS) {
        tu_captured_event *e = &tu_capture.events[tu_capture.count];
        e->kind = event->Kind;
        e->pointer = event->Pointer;
        e->size = event->Size;
        size_t room = TU_CAPTURE_TEXT_BYTES - tu_capture.text_used;
        char *dst = tu_capture.text + tu_capture.text_used;
        if (room > 0) {
            tu_copy_text(dst, room, event->Text);
            tu_capture.text_used += strlen(dst) + 1;
            e->text = dst;
        } else {
            e->text = "";
        }
        InterlockedIncrement(&tu_capture.count);
    } else {
        InterlockedIncrement(&tu_capture.dropped);
    }
    InterlockedExchange(&tu_capture.lock, 0);
}

/* Forgets every captured event (and resets the recorder's counts). */
static inline void tu_capture_reset(void)
{
    tu_events_reset();
    while (InterlockedCompareExchange(&tu_capture.lock, 1, 0) != 0)
        SwitchToThread();
    tu_capture.count = 0;
    tu_capture.dropped = 0;
    tu_capture.text_used = 0;
    InterlockedExchange(&tu_capture.lock, 0);
}

/* As tu_events_install, with the capture in front of the recorder. Returns 0 if the OS refused the
 * memory (the recorder then works alone). */
static inline int tu_capture_install(void)
{
    tu_disable_event_log();
    if (!tu_capture.events) {
        tu_capture.events = (tu_captured_event *)VirtualAlloc(
            NULL, TU_CAPTURE_MAX_EVENTS * sizeof(tu_captured_event), MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
        tu_capture.text = (char *)VirtualAlloc(NULL, TU_CAPTURE_TEXT_BYTES, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    }
    tu_capture_reset();
    if (!tu_capture.events || !tu_capture.text) {
        FastMM_SetEventCallback(tu_event_callback, NULL);
        return 0;
    }
    FastMM_SetEventCallback(tu_capture_callback, NULL);
    return 1;
}

static inline size_t tu_capture_count(void)
{
    return (size_t)tu_capture.count;
}

static inline const tu_captured_event *tu_capture_event(size_t i)
{
    return i < (size_t)tu_capture.count ? &tu_capture.events[i] : NULL;
}

/* The first captured event about `pointer` of `kind` (any kind: 0), or NULL. */
static inline const tu_captured_event *tu_capture_find(int kind, const void *pointer)
{
    for (size_t i = 0; i < (size_t)tu_capture.count; i++) {
        const tu_captured_event *e = &tu_capture.events[i];
        if ((kind == 0 || e->kind == kind) && e->pointer == pointer)
            return e;
    }
    return NULL;
}

static inline const char *tu_debug_event_kind_name(int kind)
{
    switch (kind) {
    case FastMM_EventDebugBlockHeaderCorrupted: return "DebugBlockHeaderCorrupted";
    case FastMM_EventDebugBlockFooterCorrupted: return "DebugBlockFooterCorrupted";
    case FastMM_EventFreedBlockModified: return "FreedBlockModified";
    case FastMM_EventVirtualCallOnFreedObject: return "VirtualCallOnFreedObject";
    default: return tu_event_kind_name(kind);
    }
}

/* Copies the rest of the line that follows `label` in `text` (without the line break) into `out`.
 * Returns 0 when `label` does not occur. */
static inline int tu_text_line_after(const char *text, const char *label, char *out, size_t out_size)
{
    const char *at = text ? strstr(text, label) : NULL;
    if (out_size)
        out[0] = 0;
    if (!at)
        return 0;
    at += strlen(label);
    size_t n = strcspn(at, "\r\n");
    if (out_size) {
        if (n >= out_size)
            n = out_size - 1;
        memcpy(out, at, n);
        out[n] = 0;
    }
    return 1;
}

/* The "offset(length)" list of a FreedBlockModified report, e.g. "50(1) 64(8)". */
#define TU_MODIFIED_OFFSETS_LABEL "Modified bytes at offsets: "

static inline int tu_modified_offsets(const char *text, char *out, size_t out_size)
{
    return tu_text_line_after(text, TU_MODIFIED_OFFSETS_LABEL, out, out_size);
}

/* The largest user sizes whose debug blocks (header and footer of `depth` entries included) are still
 * small or medium blocks: a debug block's kind is the kind of the block that holds it. */
static inline size_t tu_debug_max_small_user(unsigned depth)
{
    return TU_MAX_SMALL_USER - TU_DEBUG_HEADER_SIZE - tu_debug_footer_size(depth);
}

static inline size_t tu_debug_max_medium_user(unsigned depth)
{
    return TU_MAX_MEDIUM_USER - TU_DEBUG_HEADER_SIZE - tu_debug_footer_size(depth);
}

#endif /* FM5_TEST_UTIL_H */
