/* fm5bench: one allocation workload, once, with one allocator, in one process.
 *
 *   fm5bench --list
 *       one line per workload: <name> <category> <threads>
 *   fm5bench --workload <name> --allocator <spec> [--scale <factor>]
 *       prints exactly one line to stdout:
 *       RESULT workload=<name> allocator=<spec> ms=<ms, 3 decimals> ops=<allocator calls>
 *              peak_commit_kb=<PeakPagefileUsage / 1024> peak_ws_kb=<PeakWorkingSetSize / 1024>
 *              page_faults=<the process's page faults in the timed interval, -1 if unknown>
 *       and exits 0; on failure prints "ERROR <message>" to stderr and exits non-zero.
 *
 * Allocator specs: see allocators.c. --scale multiplies the iteration counts (default 1.0). ops counts
 * every allocator call the workload made (bench.h), the same for every allocator at a given scale.
 * The program is not linked with fm5: it loads the allocator's DLL at run time. */
#include "bench.h"

#include <psapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern double g_timer_start_ms, g_timer_stop_ms;
extern long long g_faults_at_start, g_faults_at_stop;
extern int g_timer_stopped;

#define W(name, category, threads, fn, param, param2, listed) \
    {name, category, threads, fn, param, param2, listed}
#define DEBUG_PAIR(name, size) \
    W(name, "debug", 1, wl_debug_loop, size, 0, 1), W(name "_d20", "debug", 1, wl_debug_loop, size, 20, 1)

static const workload g_workloads[] = {
    /* FastCode */
    W("realloc_small", "st-realloc", 1, wl_realloc_mem, 0, 0, 1),
    W("realloc_medium", "st-realloc", 1, wl_realloc_mem, 1, 0, 1),
    W("realloc_large", "st-realloc", 1, wl_realloc_mem, 2, 0, 1),
    W("small_upsize", "st-realloc", 1, wl_small_upsize, 0, 0, 1),
    W("tiny_downsize", "st-realloc", 1, wl_small_downsize, 64, 0, 1),
    W("verysmall_downsize", "st-realloc", 1, wl_small_downsize, 200, 0, 1),
    W("address_space_creep", "st-allocfree", 1, wl_address_space_creep, 0, 0, 1),
    W("address_space_creep_large", "st-allocfree", 1, wl_address_space_creep_large, 0, 0, 1),
    W("large_block_spread", "st-allocfree", 1, wl_large_block_spread, 0, 0, 1),
    W("st_alloc_use_free", "st-allocfree", 1, wl_st_alloc_use_free, 0, 0, 1),
    W("st_realloc_use", "st-realloc", 1, wl_st_realloc_use, 0, 0, 1),
    W("st_tiny_realloc", "st-realloc", 1, wl_st_tiny_realloc, 0, 0, 1),
    W("mt_alloc_use_free_2", "mt-allocfree", 2, wl_mt_alloc_use_free, 2, 0, 1),
    W("mt_alloc_use_free_4", "mt-allocfree", 4, wl_mt_alloc_use_free, 4, 0, 1),
    W("mt_alloc_use_free_8", "mt-allocfree", 8, wl_mt_alloc_use_free, 8, 0, 1),
    W("mt_alloc_use_free_16", "mt-allocfree", 16, wl_mt_alloc_use_free, 16, 0, 1),
    W("mt_alloc_use_free_31", "mt-allocfree", 31, wl_mt_alloc_use_free, 31, 0, 1),
    W("mt_alloc_use_free_64", "mt-allocfree", 64, wl_mt_alloc_use_free, 64, 0, 1),
    W("raw_perf_1", "st-allocfree", 1, wl_raw_perf_1, 1, 0, 1),
    W("raw_perf_1_after_16", "st-allocfree", 1, wl_raw_perf_1_after_contention, 16, 0, 1),
    W("raw_perf_2", "mt-allocfree", 2, wl_raw_perf_mt, 2, 0, 1),
    W("raw_perf_4", "mt-allocfree", 4, wl_raw_perf_mt, 4, 0, 1),
    W("raw_perf_8", "mt-allocfree", 8, wl_raw_perf_mt, 8, 0, 1),
    W("raw_perf_16", "mt-allocfree", 16, wl_raw_perf_mt, 16, 0, 1),
    W("raw_perf_31", "mt-allocfree", 31, wl_raw_perf_mt, 31, 0, 1),
    W("raw_perf_63", "mt-allocfree", 63, wl_raw_perf_mt, 63, 0, 1),
    W("allocmem", "st-allocfree", 1, wl_allocmem, 0, 0, 1),
    W("validate45", "st-allocfree", 1, wl_validate, 45, 0, 1),
    W("validate46", "st-allocfree", 1, wl_validate, 46, 0, 1),
    W("validate47", "st-allocfree", 1, wl_validate, 47, 0, 1),
    W("validate48", "st-allocfree", 1, wl_validate, 48, 0, 1),
    /* mimalloc-bench */
    W("larson", "mt-replay", 4, wl_larson, 0, 0, 1),
    W("xmalloc", "mt-allocfree", 4, wl_xmalloc, 0, 0, 1),
    W("cache_scratch", "mt-allocfree", 2, wl_cache_scratch, 0, 0, 1),
    W("glibc_simple", "st-allocfree", 1, wl_glibc_simple, 0, 0, 1),
    W("malloc_large", "st-allocfree", 1, wl_malloc_large, 0, 0, 1),
    /* fm5's: the large-block cache's case (bench/wl_large.c) */
    W("large_loop_1m", "st-allocfree", 1, wl_large_loop, 0, 0, 1),
    W("large_loop_varied", "st-allocfree", 1, wl_large_loop, 1, 0, 1),
    /* debug mode (fm5 only) */
    DEBUG_PAIR("debug_1", 1),
    DEBUG_PAIR("debug_15", 15),
    DEBUG_PAIR("debug_39", 39),
    DEBUG_PAIR("debug_40", 40),
    DEBUG_PAIR("debug_41", 41),
    DEBUG_PAIR("debug_64", 64),
    DEBUG_PAIR("debug_128", 128),
    DEBUG_PAIR("debug_1k", 1024),
    DEBUG_PAIR("debug_4k", 4096),
    DEBUG_PAIR("debug_64k", 65536),
    W("xml_debug", "debug", 1, wl_xml_debug, 0, 0, 1),
    /* echo server: threads = clients (plus as many server threads) */
    W("echo_server_1", "server", 1, wl_echo_server, 1, 0, 1),
    W("echo_server_10", "server", 10, wl_echo_server, 10, 0, 1),
    W("echo_server_100", "server", 100, wl_echo_server, 100, 0, 1),
    W("echo_server_500", "server", 500, wl_echo_server, 500, 0, 1),
    W("echo_server_1000", "server", 1000, wl_echo_server, 1000, 0, 1),
};

#define WORKLOAD_COUNT (sizeof g_workloads / sizeof g_workloads[0])

static int usage(void)
{
    fprintf(stderr, "ERROR usage: fm5bench --list | fm5bench --workload <name> --allocator <spec> "
                    "[--scale <factor>]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *name = NULL, *spec = NULL;
    double scale = 1.0;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0)
            list = 1;
        else if (strcmp(argv[i], "--workload") == 0 && i + 1 < argc)
            name = argv[++i];
        else if (strcmp(argv[i], "--allocator") == 0 && i + 1 < argc)
            spec = argv[++i];
        else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
            char *end;
            scale = strtod(argv[++i], &end);
            if (*end || !(scale > 0))
                bench_fatal("bad --scale '%s'", argv[i]);
        } else
            return usage();
    }
    if (list) {
        for (size_t k = 0; k < WORKLOAD_COUNT; k++)
            if (g_workloads[k].listed)
                printf("%s %s %d\n", g_workloads[k].name, g_workloads[k].category, g_workloads[k].threads);
        return 0;
    }
    if (!name || !spec)
        return usage();
    const workload *w = NULL;
    for (size_t k = 0; k < WORKLOAD_COUNT; k++)
        if (strcmp(g_workloads[k].name, name) == 0)
            w = &g_workloads[k];
    if (!w)
        bench_fatal("unknown workload '%s' (see --list)", name);

    bench_load_allocator(spec);
    if (strcmp(w->category, "debug") == 0 && !g_alloc.enter_debug_mode)
        bench_fatal("workload %s needs an fm5 allocator (fm5 or fm5:<dll>), not '%s'", name, spec);

    bench_timer_restart();
    uint64_t ops = w->run(w, scale);
    bench_timer_stop();

    PROCESS_MEMORY_COUNTERS counters;
    memset(&counters, 0, sizeof counters);
    counters.cb = sizeof counters;
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof counters))
        bench_fatal("GetProcessMemoryInfo failed (%lu)", GetLastError());
    long long faults = g_faults_at_start >= 0 && g_faults_at_stop >= g_faults_at_start
                           ? g_faults_at_stop - g_faults_at_start
                           : -1;
    printf("RESULT workload=%s allocator=%s ms=%.3f ops=%llu peak_commit_kb=%llu peak_ws_kb=%llu page_faults=%lld\n",
           name, spec, g_timer_stop_ms - g_timer_start_ms, (unsigned long long)ops,
           (unsigned long long)(counters.PeakPagefileUsage / 1024),
           (unsigned long long)(counters.PeakWorkingSetSize / 1024), faults);
    fflush(stdout);
    /* Leave without unloading the allocator's DLL or running its detach code on blocks still
     * referenced by the CRT. */
    ExitProcess(0);
}
