/* What the medium blocks leave free: st_realloc_use's loop (bench/wl_fastcode.c, with its constants
 * and helpers from bench.h: 150,000 slots reallocated to sizes of up to 64 B, 1 KB, 4 KB or 256 KB,
 * each block used) run on fm5 directly, with FastMM_GetHeapStatus after every round: the address
 * space fm5 holds, its free medium bytes (FreeBig) and the peak working set. The free medium bytes
 * are the holes that no request has taken again; a change of the medium rules shows there before it
 * shows in time.
 *   medium_holes [rounds]     (default 4)
 * Output, one line a round: "round R: address space A MB, allocated L MB, free medium F MB, free small
 * S MB, unfed U MB, peak working set P MB". Built and run by scripts/measure-medium-holes.sh. */
#include <windows.h>
#include <psapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "bench.h"
#include "fm5.h"

static double megabytes(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 4;
    static char *slot[ST_REALLOC_USE_SLOTS];
    static const long limits[4] = FASTCODE_CHURN_LIMITS;
    int64_t cur = ST_REALLOC_USE_PRIME;
    unsigned sum = 0;
    for (long r = 1; r <= rounds; r++) {
        for (long i = 0; i < ST_REALLOC_USE_SLOTS; i++) {
            long size = (long)(cur % slot_limit(i, limits[0], limits[1], limits[2], limits[3])) + 1;
            cur += ST_REALLOC_USE_PRIME;
            char *p = fm5_realloc(slot[i], (size_t)size);
            if (!p) {
                fprintf(stderr, "medium_holes: fm5_realloc of %ld bytes failed\n", size);
                return 1;
            }
            slot[i] = p;
            sum += use_block(p, size);
        }
        FastMM_HeapStatus status;
        PROCESS_MEMORY_COUNTERS counters;
        if (!FastMM_GetHeapStatus(&status, 1000) ||
            !GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof counters)) {
            fprintf(stderr, "medium_holes: no heap status or memory counters\n");
            return 1;
        }
        printf("round %ld: address space %.1f MB, allocated %.1f MB, free medium %.1f MB, free small %.1f MB, "
               "unfed %.1f MB, peak working set %.1f MB\n",
               r, megabytes(status.TotalAddrSpace), megabytes(status.TotalAllocated), megabytes(status.FreeBig),
               megabytes(status.FreeSmall), megabytes(status.Unused), megabytes(counters.PeakWorkingSetSize));
    }
    for (long i = 0; i < ST_REALLOC_USE_SLOTS; i++)
        fm5_free(slot[i]);
    return sum == 0xFFFFFFFFu; /* keeps the reads */
}
