/* Workloads after mimalloc-bench (daanx/mimalloc-bench): the parameters are bench.sh's standard
 * invocations, the code is ours. Each runs a fixed amount of work instead of a fixed time, so that
 * it is deterministic and its ops count is the same for every allocator. */
#include "bench.h"

#include <string.h>

/* ---- larson: server "bleeding" ------------------------------------------------------------------ */
/* bench.sh: larson 5 8 1000 5000 100 4141 N: sizes [8, 1000), 5000 chunks per thread, 100 rounds,
 * seed 4141. Each thread replaces random victims among its chunks (rounds x chunks replacements per
 * generation), then starts a new thread that inherits its array and ends, so blocks allocated by one
 * thread are freed by the next. Instead of 5 seconds, each of the LARSON_THREADS lineages runs
 * LARSON_GENERATIONS generations (x --scale; F_larson: 500,000 replacements per generation kept, the
 * generation count chosen for ~1 s). The initial chunks are allocated by the main thread, as in larson. */
#define LARSON_THREADS 4
#define LARSON_CHUNKS 5000
#define LARSON_ROUNDS 100
#define LARSON_GENERATIONS 4.0

typedef struct larson_lineage {
    char **chunks;
    uint64_t rng;
    long generation, generations;
    uint64_t ops;
} larson_lineage;

static volatile LONG g_larson_running;
static HANDLE g_larson_done;

static size_t larson_size(uint64_t *rng) { return 8 + (size_t)(bench_rand(rng) % (1000 - 8)); }

static DWORD WINAPI larson_thread(void *arg)
{
    larson_lineage *l = arg;
    uint64_t ops = 0;
    if (l->generation == 0)
        bench_wait_gate();
    for (long k = 0; k < (long)LARSON_ROUNDS * LARSON_CHUNKS; k++) {
        long victim = (long)(bench_rand(&l->rng) % LARSON_CHUNKS);
        b_free(&ops, l->chunks[victim]);
        size_t size = larson_size(&l->rng);
        l->chunks[victim] = b_malloc(&ops, size);
        l->chunks[victim][0] = (char)k;
        l->chunks[victim][size - 1] = (char)k;
    }
    l->ops += ops;
    if (++l->generation < l->generations) {
        HANDLE next = CreateThread(NULL, 256 * 1024, larson_thread, l, STACK_SIZE_PARAM_IS_A_RESERVATION,
                                   NULL);
        if (!next)
            bench_fatal("larson: CreateThread failed (%lu)", GetLastError());
        CloseHandle(next);
    } else if (InterlockedDecrement(&g_larson_running) == 0) {
        SetEvent(g_larson_done);
    }
    return 0;
}

/* The first generation of every lineage goes through bench_run_threads (start gate, timer); it
 * returns when the first generations end, and we then wait for the last one. */
uint64_t wl_larson(const workload *w, double scale)
{
    (void)w;
    larson_lineage *l = bench_pages(LARSON_THREADS * sizeof *l);
    uint64_t main_ops = 0;
    long generations = bench_scaled(LARSON_GENERATIONS, scale);
    g_larson_running = LARSON_THREADS;
    g_larson_done = CreateEventW(NULL, TRUE, FALSE, NULL);
    for (int t = 0; t < LARSON_THREADS; t++) {
        l[t].chunks = bench_pages(LARSON_CHUNKS * sizeof(char *));
        l[t].rng = 4141 + 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
        l[t].generations = generations;
        for (int k = 0; k < LARSON_CHUNKS; k++) {
            size_t size = larson_size(&l[t].rng);
            l[t].chunks[k] = b_malloc(&main_ops, size);
            l[t].chunks[k][0] = 1;
        }
    }
    bench_run_threads(LARSON_THREADS, larson_thread, l, sizeof *l, 0);
    WaitForSingleObject(g_larson_done, INFINITE);
    bench_timer_stop();
    CloseHandle(g_larson_done);
    uint64_t ops = main_ops;
    for (int t = 0; t < LARSON_THREADS; t++) {
        for (int k = 0; k < LARSON_CHUNKS; k++)
            b_free(&ops, l[t].chunks[k]);
        ops += l[t].ops;
        bench_free_pages(l[t].chunks);
    }
    bench_free_pages(l);
    return ops;
}

/* ---- xmalloc: producers allocate, consumers free ------------------------------------------------ */
/* bench.sh: xmalloc-test -w N -t 5 -s 64: N allocating threads fill batches of 4096 64-byte objects,
 * N releasing threads free them, at most 100 batches queued. N = 2 here (4 threads in all); instead of
 * 5 s, each producer makes XMALLOC_BATCHES batches (x --scale). The batch (an array of 4096 pointers)
 * is itself allocated by the producer and freed by the consumer. */
#define XMALLOC_PAIRS 2
#define XMALLOC_BATCH 4096
#define XMALLOC_QUEUE 100
#define XMALLOC_BATCHES 600.0

static struct {
    CRITICAL_SECTION lock;
    CONDITION_VARIABLE not_empty, not_full;
    void **queue[XMALLOC_QUEUE];
    int head, count, producers_left;
} g_xq;

typedef struct xmalloc_thread {
    int producer;
    long batches;
    uint64_t ops;
} xmalloc_thread;

static DWORD WINAPI xmalloc_worker(void *arg)
{
    xmalloc_thread *t = arg;
    uint64_t ops = 0;
    bench_wait_gate();
    if (t->producer) {
        for (long b = 0; b < t->batches; b++) {
            void **batch = b_malloc(&ops, XMALLOC_BATCH * sizeof *batch);
            for (int k = 0; k < XMALLOC_BATCH; k++) {
                batch[k] = b_malloc(&ops, 64);
                *(char *)batch[k] = (char)k;
            }
            EnterCriticalSection(&g_xq.lock);
            while (g_xq.count == XMALLOC_QUEUE)
                SleepConditionVariableCS(&g_xq.not_full, &g_xq.lock, INFINITE);
            g_xq.queue[(g_xq.head + g_xq.count++) % XMALLOC_QUEUE] = batch;
            WakeConditionVariable(&g_xq.not_empty);
            LeaveCriticalSection(&g_xq.lock);
        }
        EnterCriticalSection(&g_xq.lock);
        if (--g_xq.producers_left == 0)
            WakeAllConditionVariable(&g_xq.not_empty);
        LeaveCriticalSection(&g_xq.lock);
    } else {
        for (;;) {
            EnterCriticalSection(&g_xq.lock);
            while (g_xq.count == 0 && g_xq.producers_left > 0)
                SleepConditionVariableCS(&g_xq.not_empty, &g_xq.lock, INFINITE);
            if (g_xq.count == 0) {
                LeaveCriticalSection(&g_xq.lock);
                break;
            }
            void **batch = g_xq.queue[g_xq.head];
            g_xq.head = (g_xq.head + 1) % XMALLOC_QUEUE;
            g_xq.count--;
            WakeConditionVariable(&g_xq.not_full);
            LeaveCriticalSection(&g_xq.lock);
            for (int k = 0; k < XMALLOC_BATCH; k++)
                b_free(&ops, batch[k]);
            b_free(&ops, batch);
        }
    }
    t->ops = ops;
    return 0;
}

uint64_t wl_xmalloc(const workload *w, double scale)
{
    (void)w;
    xmalloc_thread t[2 * XMALLOC_PAIRS];
    InitializeCriticalSection(&g_xq.lock);
    InitializeConditionVariable(&g_xq.not_empty);
    InitializeConditionVariable(&g_xq.not_full);
    g_xq.head = g_xq.count = 0;
    g_xq.producers_left = XMALLOC_PAIRS;
    for (int k = 0; k < 2 * XMALLOC_PAIRS; k++) {
        t[k].producer = k % 2 == 0;
        t[k].batches = bench_scaled(XMALLOC_BATCHES, scale);
        t[k].ops = 0;
    }
    bench_run_threads(2 * XMALLOC_PAIRS, xmalloc_worker, t, sizeof t[0], 0);
    DeleteCriticalSection(&g_xq.lock);
    uint64_t ops = 0;
    for (int k = 0; k < 2 * XMALLOC_PAIRS; k++)
        ops += t[k].ops;
    return ops;
}

/* ---- cache-scratch: passive false sharing ------------------------------------------------------- */
/* bench.sh: cache-scratch N 1000 1 2000000 N: N threads, 1000 iterations, 1-byte objects, 2,000,000
 * repetitions. The main thread allocates N 1-byte objects back to back and hands one to each thread;
 * the thread frees it, then 1000 times allocates an object, writes and reads it `repetitions` times,
 * and frees it. An allocator that hands a thread memory on another thread's cache line loses.
 * N = 2 (the machine's cores). F_cache_scratch: repetitions x 1/5 -> 400,000. */
#define SCRATCH_THREADS 2

typedef struct scratch_thread {
    char *object;
    long iterations, repetitions;
    uint64_t ops;
} scratch_thread;

static DWORD WINAPI scratch_worker(void *arg)
{
    scratch_thread *t = arg;
    uint64_t ops = 0;
    bench_wait_gate();
    b_free(&ops, t->object);
    const long iterations = t->iterations, repetitions = t->repetitions;
    for (long i = 0; i < iterations; i++) {
        volatile char *a = b_malloc(&ops, 1);
        for (long j = 0; j < repetitions; j++) {
            a[0] = (char)i;
            (void)a[0];
        }
        b_free(&ops, (void *)a);
    }
    t->ops = ops;
    return 0;
}

uint64_t wl_cache_scratch(const workload *w, double scale)
{
    (void)w;
    scratch_thread t[SCRATCH_THREADS];
    uint64_t ops = 0;
    for (int k = 0; k < SCRATCH_THREADS; k++) {
        t[k].object = b_malloc(&ops, 1);
        t[k].iterations = 1000;
        t[k].repetitions = bench_scaled(2000000, 0.2 * scale);
        t[k].ops = 0;
    }
    bench_run_threads(SCRATCH_THREADS, scratch_worker, t, sizeof t[0], 0);
    for (int k = 0; k < SCRATCH_THREADS; k++)
        ops += t[k].ops;
    return ops;
}

/* ---- glibc-simple ------------------------------------------------------------------------------- */
/* glibc's bench-malloc-simple: for sizes 16, 32 and 64 and n in {25, 100, 400, 1600} live blocks,
 * 2,000,000 / n times allocate n blocks then free them; first in the main thread, then in one extra
 * thread (one thread runs at a time). F_glibc_simple: the 2,000,000 x 1/4. */
typedef struct simple_args {
    double scale;
    uint64_t ops;
} simple_args;

static uint64_t glibc_simple_pass(double scale)
{
    static const size_t sizes[3] = {16, 32, 64};
    static const long counts[4] = {25, 100, 400, 1600};
    void *blocks[1600];
    uint64_t ops = 0;
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < 4; c++) {
            long n = counts[c];
            long iterations = bench_scaled(2000000.0 / (double)n, 0.25 * scale);
            for (long i = 0; i < iterations; i++) {
                for (long k = 0; k < n; k++) {
                    blocks[k] = b_malloc(&ops, sizes[s]);
                    *(char *)blocks[k] = 1;
                }
                for (long k = 0; k < n; k++)
                    b_free(&ops, blocks[k]);
            }
        }
    return ops;
}

static DWORD WINAPI glibc_simple_thread(void *arg)
{
    simple_args *a = arg;
    a->ops = glibc_simple_pass(a->scale);
    return 0;
}

uint64_t wl_glibc_simple(const workload *w, double scale)
{
    (void)w;
    uint64_t ops = glibc_simple_pass(scale);
    simple_args a = {scale, 0};
    HANDLE thread = CreateThread(NULL, 256 * 1024, glibc_simple_thread, &a, STACK_SIZE_PARAM_IS_A_RESERVATION,
                                 NULL);
    if (!thread)
        bench_fatal("glibc_simple: CreateThread failed (%lu)", GetLastError());
    WaitForSingleObject(thread, INFINITE);
    CloseHandle(thread);
    return ops + a.ops;
}

/* ---- malloc-large ------------------------------------------------------------------------------- */
/* 2000 allocations of 5-25 MiB, at most 20 live (slot i % 20 is freed and refilled); mimalloc-bench
 * draws the sizes with mt19937(42), we with xorshift64* seeded 42. Each block's first and last byte
 * and one byte per 1 MiB are written. Full count (no factor). */
uint64_t wl_malloc_large(const workload *w, double scale)
{
    (void)w;
    enum { LIVE = 20 };
    const size_t mib = 1024 * 1024;
    char *slots[LIVE] = {0};
    uint64_t rng = 42, ops = 0;
    long count = bench_scaled(2000, scale);
    for (long i = 0; i < count; i++) {
        size_t size = 5 * mib + (size_t)(bench_rand(&rng) % (20 * mib + 1));
        b_free(&ops, slots[i % LIVE]);
        char *p = slots[i % LIVE] = b_malloc(&ops, size);
        for (size_t k = 0; k < size; k += mib)
            p[k] = 1;
        p[size - 1] = 1;
    }
    for (int i = 0; i < LIVE; i++)
        b_free(&ops, slots[i]);
    return ops;
}
