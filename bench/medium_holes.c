/* What the medium blocks leave free: st_realloc_use's loop (bench/wl_fastcode.c: 150,000 slots
 * reallocated to random sizes of up to 64 B, 1 KB, 4 KB or 256 KB, each block used, prime 29) run
 * on fm5 directly, with FastMM_GetHeapStatus after every round: the address space fm5 holds, its
 * free medium bytes (FreeBig) and the peak working set. The free medium bytes are the holes that no
 * request has taken again; a change of the medium rules shows there before it shows in time.
 *   medium_holes [rounds]     (default 4)
 * Output, one line a round: "round R: address space A MB, allocated L MB, free medium F MB, free small
 * S MB, unfed U MB, peak working set P MB". Built and run by scripts/measure-medium-holes.sh. */
#include <windows.h>
#include <psapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "fm5.h"

enum { SLOTS = 150000, PRIME = 29 };

static long slot_limit(long i)
{
    if (i & 1)
        return 64;
    if (i & 15)
        return 1024;
    if (i & 255)
        return 4096;
    return 262144;
}

static double megabytes(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 4;
    static char *slot[SLOTS];
    int64_t cur = PRIME;
    unsigned sum = 0;
    for (long r = 1; r <= rounds; r++) {
        for (long i = 0; i < SLOTS; i++) {
            long size = (long)(cur % slot_limit(i)) + 1;
            cur += PRIME;
            char *p = fm5_realloc(slot[i], (size_t)size);
            if (!p) {
                fprintf(stderr, "medium_holes: fm5_realloc of %ld bytes failed\n", size);
                return 1;
            }
            slot[i] = p;
            for (long k = 0; k < size; k += 32)
                p[k] = (char)k;
            for (long k = 15; k < size; k += 32)
                sum += (unsigned char)p[k];
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
    for (long i = 0; i < SLOTS; i++)
        fm5_free(slot[i]);
    return sum == 0xFFFFFFFFu; /* keeps the reads */
}
