/* fm5bench: shared declarations. One allocator table (allocators.c), the workload table and the
 * command line (fm5bench.c), helpers (bench_util.c) and the workloads (wl_*.c).
 *
 * Every workload is deterministic: it makes the same allocator calls whatever the allocator, and it
 * returns their number ("ops": each malloc, calloc, free and realloc counts one; a free of NULL is not
 * made and not counted). The smoke test checks that ops agree across allocators. */
#ifndef FM5BENCH_H
#define FM5BENCH_H

#include <windows.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Allocator under test (allocators.c) ----------------------------------------------------- */

typedef void *(__cdecl *bench_malloc_fn)(size_t size);
typedef void(__cdecl *bench_free_fn)(void *p);
typedef void *(__cdecl *bench_realloc_fn)(void *p, size_t size);
typedef void *(__cdecl *bench_calloc_fn)(size_t count, size_t size);
typedef int(__cdecl *bench_int_fn)(void);
typedef int(__cdecl *bench_set_depth_fn)(unsigned count);

typedef struct bench_allocator {
    bench_malloc_fn malloc_fn;
    bench_free_fn free_fn;
    bench_realloc_fn realloc_fn; /* never called with NULL or 0: see b_realloc */
    bench_calloc_fn calloc_fn;   /* NULL: malloc + memset */
    /* fm5 only (NULL otherwise): debug-mode entry points. */
    bench_int_fn enter_debug_mode;
    bench_int_fn exit_debug_mode;
    bench_set_depth_fn set_stack_depth;
} bench_allocator;

extern bench_allocator g_alloc;

/* Loads the allocator named by `spec` into g_alloc; on failure prints ERROR and exits. */
void bench_load_allocator(const char *spec);

/* ---- Helpers (bench_util.c) ------------------------------------------------------------------ */

/* Prints "ERROR <message>" to stderr and ends the process with exit code 1. */
/* gnu_printf: fm5bench is built with __USE_MINGW_ANSI_STDIO (bench/CMakeLists.txt). */
void bench_fatal(const char *format, ...) __attribute__((format(gnu_printf, 1, 2), noreturn));

double bench_now_ms(void);
/* The timed interval: main starts it before the workload and stops it after, unless the workload
 * restarted it (to leave set-up out) or stopped it itself (to leave tear-down out). */
void bench_timer_restart(void);
void bench_timer_stop(void);
/* The process's page faults so far (under Wine the Linux kernel's count, bench_util.c); -1 if unknown. */
long long bench_page_faults(void);

/* max(1, round(base * factor)): an iteration count scaled by --scale and a workload's factor. */
long bench_scaled(double base, double factor);

/* The n-th (from 0) of FastCode's "VeryGoodPrimes": primes below 65536 whose popcount lies strictly
 * between MulDiv(bits, 8, 20) and MulDiv(bits, 12, 20), bits = the number of significant bits
 * (37, 41, 139, 149, 163, 197, 541, ...). */
unsigned bench_very_good_prime(int n);

/* Runs `count` threads of `fn`, argument `(char *)args + i * arg_size` for thread i. All threads are
 * created first and wait on a start gate; the timer restarts when the gate opens; returns after every
 * thread ended. `stack` is the stack reservation (0: 256 KB). */
void bench_run_threads(int count, DWORD(WINAPI *fn)(void *), void *args, size_t arg_size,
                       size_t stack);
/* Called by each thread started by bench_run_threads before its work: waits for the gate. */
void bench_wait_gate(void);

/* Zeroed pages for a workload's own tables (pointer arrays, queues), kept away from every heap under
 * test; bench_free_pages releases them. */
void *bench_pages(size_t bytes);
void bench_free_pages(void *p);

/* Deterministic xorshift64* generator. */
static inline uint64_t bench_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Delphi's allocation sizes: SetLength(UnicodeString, n) asks for SizeOf(StrRec) + (n + 1) * 2 bytes
 * (StrRec: 12 bytes on Win32, 16 on Win64); a dynamic array of n elements for TDynArrayRec (8 / 16)
 * + n * element size. */
#define DELPHI_STRREC ((size_t)(sizeof(void *) == 8 ? 16 : 12))
#define DELPHI_DYNARRAY ((size_t)(sizeof(void *) == 8 ? 16 : 8))
static inline size_t delphi_string_bytes(size_t chars) { return DELPHI_STRREC + (chars + 1) * 2; }

/* ---- FastCode's slot churns (wl_fastcode.c; bench/medium_holes.c runs st_realloc_use's) ------- */

/* The size limits of st_alloc_use_free's and st_realloc_use's slots (slot_limit's a to d), and
 * st_realloc_use's slot count and prime. */
#define FASTCODE_CHURN_LIMITS { 64, 1024, 4096, 262144 }
#define ST_REALLOC_USE_SLOTS 150000
#define ST_REALLOC_USE_PRIME 29

/* The size limit of slot i: odd -> a, i%16 != 0 -> b, i%256 != 0 -> c, else d. */
static inline long slot_limit(long i, long a, long b, long c, long d)
{
    if (i & 1)
        return a;
    if (i & 15)
        return b;
    if (i & 255)
        return c;
    return d;
}

/* "Use": one byte written per 32, then bytes 15 + 32k read back; returns the sum of what was read,
 * which the caller must keep (stores somewhere at its end) so that the reads stay. */
static inline unsigned use_block(char *p, long size)
{
    unsigned sum = 0;
    for (long k = 0; k < size; k += 32)
        p[k] = (char)k;
    for (long k = 15; k < size; k += 32)
        sum += (unsigned char)p[k];
    return sum;
}

/* ---- Counted allocator calls ----------------------------------------------------------------- */

static inline void *b_malloc(uint64_t *ops, size_t size)
{
    void *p = g_alloc.malloc_fn(size);
    if (!p)
        bench_fatal("malloc(%zu) failed", size);
    ++*ops;
    return p;
}

static inline void b_free(uint64_t *ops, void *p)
{
    if (p) {
        g_alloc.free_fn(p);
        ++*ops;
    }
}

/* Delphi's ReallocMem: NULL grows into a new block, size 0 frees and gives NULL. Every allocator is
 * then asked for the same thing (HeapReAlloc accepts neither NULL nor, usefully, 0). */
static inline void *b_realloc(uint64_t *ops, void *p, size_t size)
{
    if (size == 0) {
        b_free(ops, p);
        return NULL;
    }
    if (!p)
        return b_malloc(ops, size);
    void *q = g_alloc.realloc_fn(p, size);
    if (!q)
        bench_fatal("realloc(%p, %zu) failed", p, size);
    ++*ops;
    return q;
}

void *b_calloc(uint64_t *ops, size_t size);

/* ---- Workloads --------------------------------------------------------------------------------- */

typedef struct workload workload;
typedef uint64_t (*workload_fn)(const workload *w, double scale);

struct workload {
    const char *name;
    const char *category;
    int threads;
    workload_fn run;
    long param;   /* the workload's own parameter: a size, a thread count, ... */
    long param2;  /* a second one (debug loops: the stack-trace depth) */
    int listed;   /* 0: runnable but left out of --list */
};

/* wl_fastcode.c */
uint64_t wl_realloc_mem(const workload *w, double scale);
uint64_t wl_small_upsize(const workload *w, double scale);
uint64_t wl_small_downsize(const workload *w, double scale);
uint64_t wl_address_space_creep(const workload *w, double scale);
uint64_t wl_address_space_creep_large(const workload *w, double scale);
uint64_t wl_large_block_spread(const workload *w, double scale);
uint64_t wl_st_alloc_use_free(const workload *w, double scale);
uint64_t wl_st_realloc_use(const workload *w, double scale);
uint64_t wl_st_tiny_realloc(const workload *w, double scale);
uint64_t wl_mt_alloc_use_free(const workload *w, double scale);
uint64_t wl_raw_perf_1(const workload *w, double scale);
uint64_t wl_raw_perf_mt(const workload *w, double scale);
uint64_t wl_raw_perf_1_after_contention(const workload *w, double scale);
uint64_t wl_allocmem(const workload *w, double scale);
uint64_t wl_validate(const workload *w, double scale);
/* wl_mimalloc.c */
uint64_t wl_larson(const workload *w, double scale);
uint64_t wl_xmalloc(const workload *w, double scale);
uint64_t wl_cache_scratch(const workload *w, double scale);
uint64_t wl_glibc_simple(const workload *w, double scale);
uint64_t wl_malloc_large(const workload *w, double scale);
uint64_t wl_large_loop(const workload *w, double scale);
/* wl_debug.c */
uint64_t wl_debug_loop(const workload *w, double scale);
uint64_t wl_xml_debug(const workload *w, double scale);
/* wl_echo.c */
uint64_t wl_echo_server(const workload *w, double scale);

#endif
