/* fm5bench helpers: errors, the timer, scaling, FastCode's primes, threads with a start gate. */
#include "bench.h"

#include <psapi.h>
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

/* Wine's GetProcessMemoryInfo leaves PageFaultCount at 0, so under Wine the count comes from the Linux
 * kernel that runs the process: the minor and major faults of /proc/<pid>/stat (fields 10 and 12).
 * Wine resolves /proc/self in its server, not in the program, so scripts/wine-run.sh exports the pid,
 * which the exec into Wine's loader keeps, as FM5_WINE_UNIX_PID; the file must name this program
 * (its comm field), so that a stale or inherited variable gives no count rather than another's.
 * Elsewhere the documented counter. -1 when neither answers. */
static int running_under_wine(void)
{
    static int known, wine;
    if (!known) {
        HMODULE ntdll = GetModuleHandleA("ntdll.dll");
        wine = ntdll && GetProcAddress(ntdll, "wine_get_version") != NULL;
        known = 1;
    }
    return wine;
}

static long long linux_page_faults(void)
{
    char pid[16], path[64], text[1024], module[MAX_PATH];
    DWORD n = GetEnvironmentVariableA("FM5_WINE_UNIX_PID", pid, sizeof pid);
    if (n == 0 || n >= sizeof pid)
        return -1;
    snprintf(path, sizeof path, "Z:\\proc\\%s\\stat", pid);
    HANDLE file = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, 0, NULL);
    if (file == INVALID_HANDLE_VALUE)
        return -1;
    DWORD got = 0;
    BOOL read = ReadFile(file, text, sizeof text - 1, &got, NULL);
    CloseHandle(file);
    if (!read)
        return -1;
    text[got] = 0;
    /* "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt ..."; the kernel
     * keeps 15 bytes of the name, and the name may hold ')' itself: the last one ends it. */
    char *open = strchr(text, '('), *close = strrchr(text, ')');
    DWORD length = GetModuleFileNameA(NULL, module, sizeof module);
    if (!open || !close || close < open || length == 0 || length >= sizeof module)
        return -1;
    const char *name = module;
    for (const char *c = module; *c; c++)
        if (*c == '\\' || *c == '/')
            name = c + 1;
    size_t shown = (size_t)(close - open - 1);
    if (shown == 0 || shown > 15 || strncmp(open + 1, name, shown) != 0)
        return -1;
    long long minflt, majflt;
    if (sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %*u %lld %*u %lld", &minflt, &majflt) != 2)
        return -1;
    return minflt + majflt;
}

long long bench_page_faults(void)
{
    if (running_under_wine())
        return linux_page_faults();
    PROCESS_MEMORY_COUNTERS counters;
    memset(&counters, 0, sizeof counters);
    counters.cb = sizeof counters;
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof counters))
        return -1;
    return counters.PageFaultCount;
}

/* Read by fm5bench.c's main through these two functions only. */
double g_timer_start_ms, g_timer_stop_ms;
long long g_faults_at_start, g_faults_at_stop;
int g_timer_stopped;

void bench_timer_restart(void)
{
    g_faults_at_start = bench_page_faults();
    g_timer_start_ms = bench_now_ms();
    g_timer_stopped = 0;
}

void bench_timer_stop(void)
{
    if (!g_timer_stopped) {
        g_timer_stop_ms = bench_now_ms();
        g_faults_at_stop = bench_page_faults();
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
