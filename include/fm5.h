/*
 * fm5.h — public interface of fm5_32.dll / fm5_64.dll, a FastMM5-class memory manager for Windows.
 *
 * Every function is exported undecorated with the cdecl convention, so the same header serves MinGW,
 * MSVC and clang-cl programs and Delphi (declare the imports as `cdecl`).
 *
 * Thread safety: every function may be called from any thread at any time unless its comment says
 * otherwise. Nothing here allocates from another heap, throws, or terminates the process on bad input:
 * failures are reported by the return value and, for misuse, by an event (see "Events").
 *
 * Block kinds: requests up to 2622 bytes are served by the small-block manager, up to 558,904 bytes by
 * the medium-block manager, and larger ones directly by VirtualAlloc (large blocks). Every block is at
 * least 8-byte aligned on Win32 and 16-byte aligned on Win64; medium and large blocks are 64-byte aligned.
 */
#ifndef FM5_H
#define FM5_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(_WIN32)
/* The host build (Linux, for the sanitizers and the profiler): a shared object or a static library. */
#  define FM5_API __attribute__((visibility("default")))
#  define FM5_CALL
#else
#  if defined(FM5_BUILDING_DLL)
#    define FM5_API __declspec(dllexport)
#  elif defined(FM5_STATIC)
#    define FM5_API
#  else
#    define FM5_API __declspec(dllimport)
#  endif
#  define FM5_CALL __cdecl
#endif

/* ------------------------------------------------------------------------------------------------
 * Core memory manager (FastMM5 names, C types)
 * ---------------------------------------------------------------------------------------------- */

/* Allocates `size` bytes. Returns NULL when the request cannot be met (address space exhausted, the
 * memory usage limit reached, or a size no block can hold); the process is left intact. GetMem(0)
 * returns a unique, freeable block. Cost: a lock-free or single try-lock path for small blocks. */
FM5_API void *FM5_CALL FastMM_GetMem(size_t size);

/* Releases a block. Returns 0 on success and -1 when `p` is not a live block handed out by fm5
 * (NULL, foreign, interior, misaligned, stack or already-freed pointer); the -1 case also records an
 * event and changes nothing. Never waits for a lock: a block whose arena is busy is queued on that
 * arena's lock-free pending-free list and released by the next thread that takes the lock. */
FM5_API int FM5_CALL FastMM_FreeMem(void *p);

/* Resizes a block, in place when FastMM5's rules allow and by moving otherwise (content preserved up
 * to the smaller size). Returns the new address, or NULL on failure: then the old block is unchanged
 * and still owned by the caller. An invalid `p` (NULL included) returns NULL and records an event.
 * Size 0 resizes to an empty block that must still be freed; use fm5_realloc for C semantics.
 * Cost: constant when in place; a copy of the smaller size when the block moves. */
FM5_API void *FM5_CALL FastMM_ReallocMem(void *p, size_t new_size);

/* As FastMM_GetMem, and the block's first `size` bytes are zero. */
FM5_API void *FM5_CALL FastMM_AllocMem(size_t size);

/* The number of bytes the block can hold (at least what was requested), all of which the program
 * may write to; for a debug block exactly what was requested, since its footer follows at once (as
 * in FastMM5). 0 for an invalid pointer, with an event. Cost: constant. */
FM5_API size_t FM5_CALL FastMM_BlockMaximumUserBytes(void *p);

/* The size requested for the block: exact for large blocks (and debug blocks); for small and medium
 * blocks, which do not record it, the same as FastMM_BlockMaximumUserBytes. 0 for an invalid pointer. */
FM5_API size_t FM5_CALL FastMM_BlockCurrentUserBytes(void *p);

/* Releases every block waiting on a pending-free list whose arena can be locked now, and returns to
 * the OS the empty medium spans those arenas keep (below) and the large-block cache's regions
 * (FastMM_SetLargeBlockCacheLimit). Returns 1 when every arena was done, 0 when some arena stayed
 * busy. */
FM5_API int FM5_CALL FastMM_ProcessAllPendingFrees(void);

/* A medium span (1.5-4 MB by the strategy) whose last block is freed stays mapped, as free medium
 * space, so that a program whose medium blocks (small blocks live in them) all go and come back does
 * not pay the OS a mapping and a page fault per page each time. Up to this many bytes of such spans
 * stay until FastMM_ProcessAllPendingFrees; beyond it, a span unused for a second goes back at its
 * arena's next medium allocation or free. An arena that would take the medium space past the most it
 * has been since start-up (or the last FastMM_ProcessAllPendingFrees) first returns the kept spans of
 * the other arenas that are not busy at that moment. FastMM_OptimizeForLowMemoryUsage keeps none;
 * FastMM_ProcessAllPendingFrees returns them all, and so does an allocation that the OS or the usage
 * limit would refuse. */
enum { FastMM_KeptMediumSpanBytes = 16 << 20 };

/* ------------------------------------------------------------------------------------------------
 * Heap status, usage summary and block walking
 * ---------------------------------------------------------------------------------------------- */

typedef struct FastMM_HeapStatus {
    size_t TotalAddrSpace;   /* address space reserved from the OS */
    size_t TotalUncommitted; /* reserved but not committed */
    size_t TotalCommitted;   /* committed */
    size_t TotalAllocated;   /* bytes in live blocks (block sizes, headers included) */
    size_t TotalFree;        /* FreeSmall + FreeBig + Unused */
    size_t FreeSmall;        /* free small blocks */
    size_t FreeBig;          /* free medium blocks */
    size_t Unused;           /* not yet carved from spans (sequential-feed remainders), and large regions
                                kept mapped in no block (the large-block cache, its regions' slack) */
    size_t Overhead;         /* span and block headers, bins and management structures */
    size_t HeapErrorCode;    /* always 0 */
} FastMM_HeapStatus;

/* Fills *status. Locks each arena in turn for at most `timeout_ms` milliseconds; an arena that stays
 * busy is left out and the function returns 0 (1 when complete). Cost: walks every block. */
FM5_API int FM5_CALL FastMM_GetHeapStatus(FastMM_HeapStatus *status, unsigned timeout_ms);

typedef struct FastMM_UsageSummary {
    size_t AllocatedBytes;          /* bytes in live blocks */
    size_t OverheadBytes;           /* address space used minus AllocatedBytes */
    double EfficiencyPercentage;    /* 100 * AllocatedBytes / address space used */
} FastMM_UsageSummary;

/* Fills *summary; returns 1 when every arena was walked, 0 otherwise. Cost: walks every block. */
FM5_API int FM5_CALL FastMM_GetUsageSummary(FastMM_UsageSummary *summary);

enum FastMM_BlockKind {
    FastMM_SmallBlock = 1,
    FastMM_MediumBlock = 2,
    FastMM_LargeBlock = 4,
    FastMM_SmallBlockSpan = 8,   /* a medium block that holds small blocks */
    FastMM_MediumBlockSpan = 16  /* an OS allocation that holds medium blocks */
};

typedef struct FastMM_WalkBlockInfo {
    void *Address;        /* the user address for blocks; the base for spans */
    size_t BlockSize;     /* the whole block, header included */
    size_t UsableSize;    /* what the user may use (0 for spans) */
    unsigned Kind;        /* one FastMM_BlockKind value */
    unsigned Arena;       /* arena index within its block kind */
    int IsFree;           /* 1 for free blocks (and unfed sequential-feed space) */
    int IsDebugBlock;     /* 1 for a debug-mode block: Address is then its user address and UsableSize
                             the size that was requested; BlockSize stays that of the whole block */
    unsigned AllocationNumber;  /* debug blocks: the allocation number (0 otherwise) */
    unsigned AllocationGroup;   /* debug blocks: the allocation group (0 otherwise) */
} FastMM_WalkBlockInfo;

/* Called once per block; return 0 to go on, non-zero to stop the walk. The callback runs while an
 * arena lock is held: it must not allocate or free from fm5 (other threads are not blocked by that,
 * they move to other arenas or queue their frees). */
typedef int (FM5_CALL *FastMM_WalkBlocksCallback)(const FastMM_WalkBlockInfo *info, void *user);

/* Walks the blocks of the kinds in `kinds` (a mask of FastMM_BlockKind; 0 means all). With
 * `used_only` set, free blocks are skipped. Each arena is locked for at most `timeout_ms`. Returns 1
 * when every selected arena was walked, 0 when some were skipped (busy) or the callback stopped. */
FM5_API int FM5_CALL FastMM_WalkBlocks(FastMM_WalkBlocksCallback callback, void *user,
                                       unsigned kinds, int used_only, unsigned timeout_ms);

/* ------------------------------------------------------------------------------------------------
 * Tuning
 * ---------------------------------------------------------------------------------------------- */

enum FastMM_OptimizationStrategy {
    FastMM_OptimizeForSpeed = 0,       /* 4 MB medium spans; empty spans kept */
    FastMM_Balanced = 1,               /* 3 MB medium spans (the default) */
    FastMM_OptimizeForLowMemoryUsage = 2 /* 1.5 MB medium spans; empty spans always released */
};

/* Applies to spans created from now on. Returns 0, or -1 for an unknown strategy. */
FM5_API int FM5_CALL FastMM_SetOptimizationStrategy(int strategy);
FM5_API int FM5_CALL FastMM_GetCurrentOptimizationStrategy(void);

/* Minimum alignment of every block returned from now on: 8, 16, 32 or 64 bytes. Enter and Exit nest
 * per value; the coarsest entered alignment applies. Exit without a matching Enter, or a value other
 * than 8/16/32/64, returns -1 and records an event. Win64 is always at least 16. */
FM5_API int FM5_CALL FastMM_EnterMinimumAddressAlignment(unsigned alignment);
FM5_API int FM5_CALL FastMM_ExitMinimumAddressAlignment(unsigned alignment);
FM5_API unsigned FM5_CALL FastMM_GetCurrentMinimumAddressAlignment(void);

/* Limit on the memory fm5 takes from the OS (committed bytes). 0 means no limit (the default). A
 * request that would pass the limit returns NULL and records an event; on the first such failure the
 * limit is raised once by 32 MB so that the program can still handle the error, as FastMM5 does. */
FM5_API void FM5_CALL FastMM_SetMemoryUsageLimit(size_t limit);
FM5_API size_t FM5_CALL FastMM_GetMemoryUsageLimit(void);
/* Bytes currently committed from the OS by fm5. */
FM5_API size_t FM5_CALL FastMM_GetCurrentMemoryUsage(void);

/* Freed large blocks (of one mapping) are kept mapped in a small cache, at most 8 regions and this
 * many bytes (32 MB by default), so that allocating and freeing buffers of a few MiB in a loop does
 * not pay the OS each time. A region unused for a second goes back to the OS at the next large-block
 * allocation or free (fm5 runs no thread of its own: a program that stops using large blocks keeps
 * what is cached until then, or until it calls FastMM_ProcessAllPendingFrees). A request takes the
 * smallest cached region that holds it (its usable size is still that of the request), one of more
 * than twice its size only while the bytes such blocks hold beyond their requests stay within the
 * same limit; when the cache is full the smallest region goes. 0 turns the cache off. Setting a
 * lower limit returns what no longer fits; FastMM_ProcessAllPendingFrees returns everything the cache
 * holds.
 * The cached bytes count in FastMM_GetCurrentMemoryUsage and against the usage limit (the cache gives
 * way first). Debug mode caches nothing, so that a use of a freed large block faults. */
FM5_API void FM5_CALL FastMM_SetLargeBlockCacheLimit(size_t bytes);
FM5_API size_t FM5_CALL FastMM_GetLargeBlockCacheLimit(void);

/* How often a thread found every arena of a kind locked and had to yield (SwitchToThread). */
FM5_API size_t FM5_CALL FastMM_SmallBlockThreadContentionCount(void);
FM5_API size_t FM5_CALL FastMM_MediumBlockThreadContentionCount(void);
FM5_API size_t FM5_CALL FastMM_LargeBlockThreadContentionCount(void);

/* Arenas: independent sets of block managers, each with its own lock, so that threads allocating at
 * once take different locks. FastMM5 fixes 4 small, 4 medium and 8 large arenas at compile time; fm5
 * starts with the same and lets them be set while fm5 holds no memory from the OS (before the first
 * allocation, or once every block is freed and returned), with no other thread allocating meanwhile:
 * between 1 (medium: 2) and FastMM_MaximumArenaCount each, 0 keeping a count as it is. Returns 0, or
 * -1 with an event for a count out of range or once fm5 holds memory (nothing changes then). Environment
 * variables FM5_SMALL_ARENAS, FM5_MEDIUM_ARENAS and FM5_LARGE_ARENAS, read when fm5 loads, do the
 * same before anything could allocate (with malloc redirection, the program's CRT allocates before
 * main). Costs: a thread that finds every arena busy tries each of them before it yields. */
enum { FastMM_MaximumArenaCount = 32 };
FM5_API int FM5_CALL FastMM_SetArenaCounts(unsigned small_arenas, unsigned medium_arenas, unsigned large_arenas);
FM5_API void FM5_CALL FastMM_GetArenaCounts(unsigned *small_arenas, unsigned *medium_arenas, unsigned *large_arenas);

/* Adaptive small-block arena affinity (off by default; FM5_ARENA_AFFINITY=1 turns it on when fm5
 * loads). Every small allocation normally tries the arenas from arena 0, so under heavy contention all
 * threads meet on the same first locks. With affinity on, a thread that has found every arena of a
 * size class locked is given its own first arena for that class (round robin over the threads that
 * get one), and its later allocations of that class start there and wrap once through the others; a
 * second attempt starts from arena 0 again, so that new spans are still started in the low arenas.
 * Classes that never met that contention keep the ordinary path. The per-thread record lives in a
 * table of 256 slots keyed by a mix of the thread id, its stack base and its TEB, so a recycled thread
 * id is not taken for its old owner; a missing, stale or changing record means arena 0, never a wrong
 * block. Costs: one byte tested per small allocation, on or off (in the cache line the allocation
 * reads anyway); slightly slower single-threaded allocation of the classes it has taken over (the
 * record is read first); partly used spans spread over more arenas.
 * Returns the previous setting. Turning it off returns every class to the ordinary path. */
FM5_API int FM5_CALL FastMM_SetAdaptiveSmallBlockArenaAffinity(int enabled);
FM5_API int FM5_CALL FastMM_GetAdaptiveSmallBlockArenaAffinity(void);

/* Thread caches (beyond FastMM5; on by default, FM5_THREAD_CACHES=0 turns them off when fm5 loads).
 * Each thread keeps a few free small blocks of every size class it uses (every small class; a bin
 * starts at 8 KB, at least 16 and at most 128 blocks (64 on Win32), and a bin that gave blocks back
 * and then ran empty doubles, up to 128 KB or 2,048 blocks, by at most 256 KB a thread in all; 1 MB a
 * thread at most), so that most small GetMem and FreeMem calls take no lock and touch no line that
 * another thread writes.
 * An empty class takes half its limit from the arenas in one go, a full one gives back its older half;
 * a block freed by another thread goes into the freeing thread's cache; a block of a nearly empty span
 * (fewer than an eighth of its blocks in use) goes back to its arena instead, so that spans are still
 * released. A thread's first blocks of a class are chosen so that no live block shares their cache
 * lines (a block another thread allocated next to one it keeps writing is not handed to this one: false
 * sharing). A cached block is a free block to everything else: a second free of it is reported as a
 * double free, walks, heap status and leak reports count it free (so the usage summary counts it as
 * overhead, not as allocated), and its span stays in use until the block leaves the cache. A thread's
 * cache goes back when the thread exits, and every cache when debug mode is entered (caches stay off
 * while it or an erase mode is active, and once fm5 uses another module's manager), when the minimum alignment changes and on FastMM_ProcessAllPendingFrees: the
 * calling thread's at once, each other thread's at its next small allocation or free. A thread killed
 * by TerminateThread keeps its cache until the next FastMM_ProcessAllPendingFrees gives it back.
 * Medium blocks: a thread also keeps up to 4 medium blocks it freed (512 KB in all) of sizes it
 * allocated lately that the cache could not serve, and hands one to a GetMem of exactly its block size,
 * so that a loop of medium GetMem and FreeMem takes no lock. A cached medium block is free to
 * everything else as a small one is; no free neighbour merges with it, and a ReallocMem that would grow
 * a block in place into it does so only when it is the calling thread's own (it goes back to its arena
 * first). Costs: up to 1 MB held per thread that allocated (what it freed of the classes it uses) and
 * 512 KB of medium blocks; spans stay in use
 * while blocks of theirs are cached; with caches off, a small free costs one locked instruction more
 * than before caches existed (every free claims its block atomically, since a cache's free takes no
 * lock). FastMM_SetThreadCaches returns the previous setting; turning caches off returns the caller's
 * cache at once and the others' at their next call. */
FM5_API int FM5_CALL FastMM_SetThreadCaches(int enabled);
FM5_API int FM5_CALL FastMM_GetThreadCaches(void);
/* Bytes held in every thread's cache now (small and medium blocks), and (if `caches` is not NULL)
 * how many threads have one: a snapshot, since each thread changes its own without a lock. */
FM5_API size_t FM5_CALL FastMM_GetThreadCacheBytes(unsigned *caches);

/* ------------------------------------------------------------------------------------------------
 * Events: misuse and failures are reported here, and written to a log file
 * ---------------------------------------------------------------------------------------------- */

enum FastMM_EventKind {
    FastMM_EventInvalidFree = 1,         /* free of a pointer fm5 did not hand out */
    FastMM_EventInvalidRealloc = 2,      /* realloc of a pointer fm5 did not hand out */
    FastMM_EventDoubleFree = 3,          /* free of a block that is already free */
    FastMM_EventReallocOfFreedBlock = 4, /* realloc of a block that is already free */
    FastMM_EventInvalidQuery = 5,        /* a size query on an invalid pointer */
    FastMM_EventOutOfMemory = 6,         /* the OS refused memory */
    FastMM_EventMemoryLimitExceeded = 7, /* a request would pass the memory usage limit */
    FastMM_EventInvalidArgument = 8,     /* a bad argument to a tuning function */
    FastMM_EventDebugBlockHeaderCorrupted = 9,  /* a debug block's header checksum does not match */
    FastMM_EventDebugBlockFooterCorrupted = 10, /* a debug block's footer checksum does not match (overrun) */
    FastMM_EventFreedBlockModified = 11,        /* a freed debug block was written to after the free */
    FastMM_EventVirtualCallOnFreedObject = 12,  /* a virtual method was called through a freed object */
    FastMM_EventMemoryLeak = 13,                /* one leaked block, or the summary of a leak report */
    FastMM_EventDebugModeReport = 14,           /* other debug-mode output, such as a state log */
    FastMM_EventReleaseFailed = 15,             /* the OS refused to take memory back: still mapped and counted */
    FastMM_EventCannotSwitchWithLivePointers = 16 /* FastMM_AttemptToUseSharedMemoryManager while fm5 holds
                                                     live blocks */
};

typedef struct FastMM_Event {
    int Kind;              /* a FastMM_EventKind */
    const void *Pointer;   /* the pointer concerned, or NULL */
    size_t Size;           /* the size concerned, or 0 */
    const char *Text;      /* the whole message, UTF-8, valid only during the callback */
} FastMM_Event;

/* Called for every event, on the thread that caused it, possibly while fm5 holds an arena lock: it
 * must not allocate from fm5. Pass NULL to remove it. */
typedef void (FM5_CALL *FastMM_EventCallback)(const FastMM_Event *event, void *user);
FM5_API void FM5_CALL FastMM_SetEventCallback(FastMM_EventCallback callback, void *user);

/* Which events go to the log file and to OutputDebugString: bit (1 << kind). By default every event
 * kind goes to both. */
FM5_API void FM5_CALL FastMM_SetLogToFileEvents(unsigned mask);
FM5_API unsigned FM5_CALL FastMM_GetLogToFileEvents(void);
FM5_API void FM5_CALL FastMM_SetOutputDebugStringEvents(unsigned mask);
FM5_API unsigned FM5_CALL FastMM_GetOutputDebugStringEvents(void);
/* Which events also show a message box (user32 is loaded on first use). Off (0) by default: a box
 * stops the program until someone answers it. */
FM5_API void FM5_CALL FastMM_SetMessageBoxEvents(unsigned mask);
FM5_API unsigned FM5_CALL FastMM_GetMessageBoxEvents(void);

/* The event log is UTF-8 text, appended to. The default is "<exe path without extension>_MemoryManager_
 * EventLog.txt", or the same name in the folder named by %FastMMLogFilePath% when that is set.
 * SetEventLogFilename takes a UTF-8 path (NULL restores the default) and returns 0, or -1 if the path
 * is too long. GetEventLogFilename returns the current path (UTF-8; valid until the next Set call). */
FM5_API int FM5_CALL FastMM_SetEventLogFilename(const char *utf8_path);
FM5_API const char *FM5_CALL FastMM_GetEventLogFilename(void);
/* Deletes the event log file. Returns 1 if it was deleted, 0 if not (for example, it did not exist). */
FM5_API int FM5_CALL FastMM_DeleteEventLogFile(void);

/* ------------------------------------------------------------------------------------------------
 * Debug mode: every block allocated while it is active carries a 64-byte header (size, allocation
 * number and group, thread, checksums) and a footer (checksum, allocation and free stack traces), is
 * filled with $90 when allocated and $80 when freed, and is checked when freed, reallocated and reused.
 * Blocks allocated in one mode keep working in the other.
 * ---------------------------------------------------------------------------------------------- */

/* Enter and Exit adjust a counter, always, even when they report failure: calls must be balanced.
 * Debug mode is active while the counter is above zero. Each returns FastMM_DebugModeActive(). The
 * Exit that ends debug mode gives the freed blocks it kept in place back to ordinary recycling, each
 * freed debug block checked first (a corrupted one is reported, and stays quarantined). It waits up
 * to 1 s for each arena's lock and leaves an arena that stays busy as it is (as one would be that a
 * walk's or an event's callback on the same thread holds). */
FM5_API int FM5_CALL FastMM_EnterDebugMode(void);
FM5_API int FM5_CALL FastMM_ExitDebugMode(void);
FM5_API int FM5_CALL FastMM_DebugModeActive(void);

enum FastMM_DebugModeOption {
    FastMM_DebugNeverFreeSmallBlockSpans = 1,   /* keep freed small blocks in place for checking (default) */
    FastMM_DebugNeverMergeFreeMediumBlocks = 2, /* keep freed medium blocks apart for checking (default) */
    FastMM_DebugNoFillPatterns = 4,             /* skip the $90/$80 fills and the freed-block check */
    FastMM_DebugNoChecksums = 8                 /* skip header and footer checksums */
};
/* Options apply to operations from now on. Set returns 0, or -1 for an unknown bit. */
FM5_API int FM5_CALL FastMM_SetDebugModeOptions(unsigned options);
FM5_API unsigned FM5_CALL FastMM_GetDebugModeOptions(void);

/* Stack-trace depth recorded per allocation and per free: 0 to 64 (default 20). Returns 0, or -1 for
 * a depth over 64. Applies to blocks allocated from now on. */
FM5_API int FM5_CALL FastMM_SetDebugModeStackTraceEntryCount(unsigned count);
FM5_API unsigned FM5_CALL FastMM_GetDebugModeStackTraceEntryCount(void);

/* Allocation numbers count debug-mode allocations from 1. A block whose number equals the break
 * number calls DebugBreak when it is allocated (0: never). The group is stored in every new block. */
FM5_API unsigned FM5_CALL FastMM_GetLastAllocationNumber(void);
FM5_API void FM5_CALL FastMM_SetBreakOnAllocationNumber(unsigned number);
FM5_API void FM5_CALL FastMM_SetCurrentAllocationGroup(unsigned group);
FM5_API unsigned FM5_CALL FastMM_GetCurrentAllocationGroup(void);

/* Checks every debug block, live and freed: checksums, and the fill pattern of freed ones. Returns 1
 * when all are intact and 0 when corruption was found (each corrupted block is reported as an
 * event). Safe while other threads allocate and free. Cost: walks every block. */
FM5_API int FM5_CALL FastMM_ScanDebugBlocksForCorruption(void);

/* Erase modes (counted: Begin and End nest). While "erase allocated" is active, every block that
 * FastMM_GetMem returns outside debug mode is filled with $90 over its usable size; while "erase
 * freed" is active, FastMM_FreeMem fills an ordinary block with $80 before releasing it. ReallocMem
 * is not affected, as in FastMM5. End without Begin returns -1. */
FM5_API void FM5_CALL FastMM_BeginEraseAllocatedBlockContent(void);
FM5_API int FM5_CALL FastMM_EndEraseAllocatedBlockContent(void);
FM5_API int FM5_CALL FastMM_EraseAllocatedBlockContentActive(void);
FM5_API void FM5_CALL FastMM_BeginEraseFreedBlockContent(void);
FM5_API int FM5_CALL FastMM_EndEraseFreedBlockContent(void);
FM5_API int FM5_CALL FastMM_EraseFreedBlockContentActive(void);

/* ------------------------------------------------------------------------------------------------
 * Leaks
 * ---------------------------------------------------------------------------------------------- */

/* Blocks the program means to leave allocated: by address, or `count` blocks of at least `size`
 * bytes. Register returns 0, or -1 when the table (1024 entries) is full; Unregister returns 0, or -1
 * when there was no such entry. */
FM5_API int FM5_CALL FastMM_RegisterExpectedMemoryLeak(void *p);
FM5_API int FM5_CALL FastMM_UnregisterExpectedMemoryLeak(void *p);
FM5_API int FM5_CALL FastMM_RegisterExpectedMemoryLeakBySize(size_t size, unsigned count);
FM5_API int FM5_CALL FastMM_UnregisterExpectedMemoryLeakBySize(size_t size, unsigned count);

/* Reports every live block that is not an expected leak: one FastMM_EventMemoryLeak event per block
 * (debug blocks with their allocation number and stack trace), then one summary event that counts the
 * leaks by size. Returns the number of leaked blocks. Cost: walks every block. */
FM5_API size_t FM5_CALL FastMM_ReportMemoryLeaks(void);
/* Writes the live blocks grouped by size (largest total first), with totals, to a UTF-8 text file
 * (NULL: the event log file), appending. Debug blocks count their requested size. Returns 0, or -1
 * when the file cannot be written. Cost: walks every block. */
FM5_API int FM5_CALL FastMM_LogStateToFile(const char *utf8_path);

/* Whether the DLL reports leaks when it unloads (off by default; FM5_DEBUG=1 or FM5_LEAK_REPORT=1 in
 * the environment turns it on). */
FM5_API void FM5_CALL FastMM_SetReportMemoryLeaksOnShutdown(int report);
FM5_API int FM5_CALL FastMM_GetReportMemoryLeaksOnShutdown(void);

/* ------------------------------------------------------------------------------------------------
 * Memory-manager sharing (Windows), by FastMM5's protocol: a named file mapping,
 * Local\FastMM_PID_XXXXXXXX (the process id in eight upper-case hex digits), holds a pointer to the
 * sharing module's Delphi TMemoryManagerEx (GetMem, FreeMem, ReallocMem, AllocMem and the two
 * expected-leak entries, in Delphi's default calling convention: "register" on Win32, the platform's
 * on Win64). So fm5 and modules built with FastMM5 (or any manager that follows the protocol, such as
 * Delphi's SimpleShareMem) share one heap in either direction.
 * ---------------------------------------------------------------------------------------------- */

/* Publishes fm5 as this process's shared memory manager. Returns 1, or 0 when fm5 already shares or
 * uses another module's manager, or another module already shares. The mapping lives until fm5 unloads. */
FM5_API int FM5_CALL FastMM_ShareMemoryManager(void);
/* Makes fm5 allocate through the manager another module shares: from then on FastMM_GetMem,
 * FastMM_AllocMem, FastMM_ReallocMem and FastMM_FreeMem (and the fm5_* C family) go to it, for the
 * rest of the process (size queries and walks see only fm5's own blocks, of which there are none).
 * fm5 switches only while it holds no live block: otherwise it reports
 * FastMM_EventCannotSwitchWithLivePointers and returns 0. Returns 1 when it switched (or already had,
 * or fm5 is itself the shared manager), 0 when no module shares. */
FM5_API int FM5_CALL FastMM_AttemptToUseSharedMemoryManager(void);

/* ------------------------------------------------------------------------------------------------
 * C standard family, with C semantics, for drop-in use
 * ---------------------------------------------------------------------------------------------- */

/* malloc: NULL on failure; fm5_malloc(0) returns a unique pointer that can be freed. */
FM5_API void *FM5_CALL fm5_malloc(size_t size);
/* calloc: zero-filled; NULL when count * size overflows or on failure. */
FM5_API void *FM5_CALL fm5_calloc(size_t count, size_t size);
/* realloc: NULL `p` acts as fm5_malloc; size 0 frees `p` and returns NULL (as the Microsoft CRT
 * does); on failure returns NULL and `p` is untouched; an invalid `p` returns NULL with an event. */
FM5_API void *FM5_CALL fm5_realloc(void *p, size_t size);
/* free: NULL is a no-op; an invalid pointer is ignored and recorded as an event. */
FM5_API void FM5_CALL fm5_free(void *p);
/* The usable size of a block (0 for NULL or an invalid pointer). */
FM5_API size_t FM5_CALL fm5_usable_size(void *p);
/* Whether `p` lies in memory fm5 has mapped (1) or not (0), without reading it and without an event:
 * how a program that replaces another allocator mid-run (malloc redirection, a Pascal memory-manager
 * unit) tells fm5's blocks from those the previous heap handed out. It answers for the address only:
 * 1 does not mean `p` is a live block's start (FastMM_FreeMem still checks that and reports misuse). */
FM5_API int FM5_CALL fm5_owns(const void *p);

/* ------------------------------------------------------------------------------------------------
 * Malloc redirection (Windows only): the C runtime's heap functions served by fm5
 * ---------------------------------------------------------------------------------------------- */

#if defined(_WIN32)
/* Points the heap functions that every loaded module imports from msvcrt.dll or from the Universal CRT
 * (ucrtbase.dll, api-ms-win-crt-heap-l1-1-0.dll, api-ms-win-crt-string-l1-1-0.dll) at fm5, by
 * rewriting the modules' import address tables, and does the same for every module loaded later
 * (before its DllMain runs). Replaced: malloc, calloc, realloc, free, _msize, _expand, _recalloc,
 * _strdup, _wcsdup, _aligned_malloc, _aligned_free, _aligned_realloc, _aligned_recalloc,
 * _aligned_msize, and msvcrt's operator new, new[], delete and delete[]. fm5's own imports are left
 * alone. Call it first thing in main (or set FM5_REDIRECT=1 in the environment: the DLL then does it
 * when it loads).
 * A pointer the runtime handed out before the switch (or allocates internally later) is recognised
 * with fm5_owns and freed, measured and resized by its own runtime; realloc/_recalloc move such a
 * block into fm5, the aligned functions leave it where it is. A pointer that is neither fm5's nor a
 * live block of the runtime's heap is refused with an event, as fm5_free does.
 * Limits: a statically linked C runtime, a function pointer taken with GetProcAddress before or after
 * the switch, and delay-loaded imports are not redirected; memory a runtime allocated internally and
 * the program frees is routed back to that runtime, but memory from fm5 handed to a runtime function
 * that frees it internally is not supported (the runtime would not know it).
 * Once called, fm5 is pinned: FreeLibrary no longer unloads it. Idempotent and thread-safe: a second
 * call patches only what was missed (normally nothing). Returns the number of import slots rewritten
 * by this call (0 or more), or -1 if redirection could not be set up (nothing was changed). */
FM5_API int FM5_CALL fm5_redirect_crt(void);
#endif

#ifdef __cplusplus
}
#endif

#endif /* FM5_H */
