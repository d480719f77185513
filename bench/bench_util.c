/* fm5bench helpers: errors, the timer, scaling, FastCode's primes, threads with a start gate. */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bench_fatal(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("ERROR ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stderr);
    ExitProcess(1);
}

double bench_now_ms(void)
{
    static LARGE_INTEGER frequency;
    LARGE_INTEGER counter;
    if (frequency.QuadPart == 0)
        QueryPerformanceFrequency(&frequency);
    QueryPerformanceCounter(&counter);
    return 1000.0 * (double)counter.QuadPart / (double)frequency.QuadPart;
}

/* Read by fm5bench.c's main through these two functions only. */
double g_timer_start_ms, g_timer_stop_ms;
int g_timer_stopped;

void bench_timer_restart(void)
{
    g_timer_start_ms = bench_now_ms();
    g_timer_stopped = 0;
}

void bench_timer_stop(void)
{
    if (!g_timer_stopped) {
        g_timer_stop_ms = bench_now_ms();
        g_timer_stopped = 1;
    }
}

long bench_scaled(double base, double factor)
{
    double r = floor(base * factor + 0.5);
    return r < 1.0 ? 1 : (long)r;
}

/* Delphi's MulDiv for non-negative operands: rounded to nearest, halves away from zero. */
static int mul_div(int a, int b, int c) { return (a * b * 2 + c) / (2 * c); }

unsigned bench_very_good_prime(int n)
{
    static unsigned primes[256];
    static int count;
    if (count == 0) {
        for (unsigned v = 2; v < 65536 && count < 256; v++) {
            int prime = 1;
            for (unsigned d = 2; d * d <= v; d++)
                if (v % d == 0) {
                    prime = 0;
                    break;
                }
            if (!prime)
                continue;
            int bits = 0, ones = 0;
            for (unsigned x = v; x; x >>= 1) {
                bits++;
                ones += (int)(x & 1);
            }
            if (ones > mul_div(bits, 8, 20) && ones < mul_div(bits, 12, 20))
                primes[count++] = v;
        }
    }
    if (n < 0 || n >= count)
        bench_fatal("no VeryGoodPrime number %d", n);
    return primes[n];
}

static HANDLE g_gate;

void bench_wait_gate(void)
{
    if (WaitForSingleObject(g_gate, INFINITE) != WAIT_OBJECT_0)
        bench_fatal("waiting for the start gate failed");
}

void bench_run_threads(int count, DWORD(WINAPI *fn)(void *), void *args, size_t arg_size,
                       size_t stack)
{
    HANDLE *threads = calloc((size_t)count, sizeof *threads);
    if (!threads)
        bench_fatal("out of memory for %d thread handles", count);
    g_gate = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (!g_gate)
        bench_fatal("CreateEvent failed (%lu)", GetLastError());
    for (int i = 0; i < count; i++) {
        threads[i] = CreateThread(NULL, stack ? stack : 256 * 1024, fn, (char *)args + (size_t)i * arg_size,
                                  STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
        if (!threads[i])
            bench_fatal("CreateThread %d of %d failed (%lu)", i + 1, count, GetLastError());
    }
    bench_timer_restart();
    SetEvent(g_gate);
    for (int i = 0; i < count; i++) {
        WaitForSingleObject(threads[i], INFINITE);
        CloseHandle(threads[i]);
    }
    CloseHandle(g_gate);
    g_gate = NULL;
    free(threads);
}

void *b_calloc(uint64_t *ops, size_t size)
{
    void *p;
    if (g_alloc.calloc_fn) {
        p = g_alloc.calloc_fn(1, size);
    } else {
        p = g_alloc.malloc_fn(size);
        if (p)
            memset(p, 0, size);
    }
    if (!p)
        bench_fatal("calloc(1, %zu) failed", size);
    ++*ops;
    return p;
}

void *bench_pages(size_t bytes)
{
    void *p = VirtualAlloc(NULL, bytes ? bytes : 1, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!p)
        bench_fatal("VirtualAlloc(%zu) for the workload's own tables failed", bytes);
    return p;
}

void bench_free_pages(void *p)
{
    if (p)
        VirtualFree(p, 0, MEM_RELEASE);
}
