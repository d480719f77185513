/* Per-thread small-block caches (fm5.h, FastMM_SetThreadCaches): a thread keeps a few free small
 * blocks of each class it uses, so that most of its GetMem and FreeMem calls touch no shared line and
 * take no lock. Beyond FastMM5, in the manner of mimalloc's thread-local heaps, but bounded as FastMM5
 * would want: at most fm5_thread_cache_grown_limit[class] blocks per class (a bin starts at
 * fm5_thread_cache_bin_limit[class] and grows only for a thread whose bursts it cannot hold) and
 * FM5_THREAD_CACHE_BYTES bytes per thread.
 *
 * A cached block, seen from everything else, is a free block that its span still counts in use: its
 * status word is marked free (a second free, a realloc or a size query of it fails as for any freed
 * block, and walks, heap status and leak reports count it free), it is on no span's free chain, and
 * the span is not released while it is cached. Only the owning thread reads or writes the chain.
 *
 * Filling and flushing go in batches: an empty bin takes up to half its limit plus one from the
 * managers under one lock (whole runs of a span's free chain, which is linked as a cache is) or one
 * compare-and-swap of the sequential feed; a full bin gives back its newer half (thread_cache.c says
 * why), one lock per manager met (a busy manager gets the blocks on its pending-free list, so that a
 * flush never waits). A block of a nearly empty span goes to the managers
 * (fm5_thread_cache_span_is_sparse), so that the span can be released. Against false sharing, a bin
 * that was never filled caches a freed block only if no live block shares its lines, and its first
 * fill hands out a block with quiet lines (thread_cache.c, quiet_block_of_fill). Every free of a small
 * block claims it (blocks/claims.h) by compare-and-swap of the status word, the managers' locked free
 * included (a cache's free takes no lock), so that of two threads freeing one block at once exactly
 * one succeeds and the other reports the double free; while its thread is the only one that has
 * claimed blocks, a cache claims with a plain load and store.
 *
 * When the caches are used: the epoch. fm5_thread_cache_epoch is odd while caches may be used (the
 * setting is on, debug mode and the erase modes are off, no other module's manager is in use, a thread
 * slot was had) and even otherwise; a cache is used only while its own epoch equals it, and a cache
 * stores only odd epochs. So one compare tells a thread both that caches are on and that its cache has
 * been flushed since the last flush request: a flush request (entering debug mode, an alignment
 * change, FastMM_ProcessAllPendingFrees) moves the epoch on, and every thread flushes its own cache at
 * its next call. Nobody but its owner touches a live cache; a cache whose thread has ended without its
 * exit call (TerminateThread) is flushed by the next FastMM_ProcessAllPendingFrees once the OS says
 * the thread is gone.
 *
 * asm/ repeats fm5_thread_cache_pop and fm5_thread_cache_push (small_block_lists.inc). */
#ifndef FM5_THREAD_CACHE_H
#define FM5_THREAD_CACHE_H

#include "base/platform.h"
#include "base/os.h"
#include "blocks/geometry.h"
#include "blocks/block_status.h"
#include "blocks/claims.h"
#include "blocks/small_blocks.h"
#include "blocks/small_block_classes.h"
#include "blocks/medium_blocks.h"

/* The bounds. A bin starts at FM5_THREAD_CACHE_BIN_BYTES / block size blocks, but at least
 * FM5_THREAD_CACHE_BIN_MINIMUM_BLOCKS (fewer would make a thread that frees and allocates a class in
 * turn hit the bin's ends every few calls: fills and flushes move half a bin) and at most
 * FM5_THREAD_CACHE_BIN_MAXIMUM_BLOCKS. Classes above FM5_THREAD_CACHE_MAXIMUM_BLOCK_SIZE would not be
 * cached (their bins hold nothing, and the paths go straight to the managers); today it is the largest
 * small block, because caching the classes from 1,088 to 2,624 bytes too cut raw_perf_1 by 20 % and
 * raw_perf_2..63 by 3-13 % (half of FastCode's raw-performance strings are 1-2 KB). 8 KB and 16 blocks
 * a bin, against 4 KB and 8, made raw_perf_8 and _16 15 % faster and larson 3-28 %, for 13 % more peak
 * commit with a thousand echo-server threads (Win64, 2026-12-02). A thread holds at most
 * FM5_THREAD_CACHE_BYTES in all (a thousand idle threads at most a thousand times that; a thread fills
 * only the bins of the classes it frees): the bins' start limits (744 KB on Win64, 777 KB on Win32)
 * and their growth (below) stay within it, which a checked build asserts at start-up, so the bins'
 * limits keep every cache within it and no path counts bytes. (A byte count kept at every GetMem and
 * free and tested at every free cost validate45 5-6 % and glibc_simple and small_upsize 2-4 % on both
 * architectures, 2026-12-07; a tighter byte bound, which trims every bin, made a 1,024-block ring of
 * mixed sizes 20 % slower than without caches with 64 KB against 155 KB of bin limits.) */
#define FM5_THREAD_CACHE_BIN_BYTES 8192u
#define FM5_THREAD_CACHE_BIN_MINIMUM_BLOCKS 16u
/* The most blocks a bin starts with, binding the classes whose 8 KB would be more blocks (below 64
 * bytes on Win64, below 128 on Win32). An empty bin takes half its limit in one locked fill and a full
 * one gives back half in one flush, so a thread that only allocates or only frees a class (a producer,
 * a consumer) takes a lock per half-limit blocks: 128 against 64 made xmalloc (64-byte blocks) 6 %
 * faster on Win64 (31 pairs, +6.4 % [+3.7, +10.7], 2026-12-06; larson, raw_perf_1 and the small
 * single-threaded rows unchanged) and adds 16 KB to the bins' start limits. Win32 keeps 64: its
 * 8-byte classes would add 32 KB, and its start limits plus the growth below would then pass
 * FM5_THREAD_CACHE_BYTES (unmeasured there: no Win32 program runs on the machines of that session). */
#ifdef FM5_32BIT
#define FM5_THREAD_CACHE_BIN_MAXIMUM_BLOCKS 64u
#else
#define FM5_THREAD_CACHE_BIN_MAXIMUM_BLOCKS 128u
#endif
#define FM5_THREAD_CACHE_MAXIMUM_BLOCK_SIZE 2624u
#define FM5_THREAD_CACHE_BYTES 1048576u
/* How far bins may grow. A bin that gave blocks back (it was full) and later ran empty had given
 * back blocks its thread wanted again: its limit doubles at that fill, up to
 * FM5_THREAD_CACHE_BIN_GROWN_BYTES and FM5_THREAD_CACHE_BIN_GROWN_BLOCKS, so that a thread that
 * allocates and frees a class in bursts larger than a bin keeps the whole burst (glibc_simple's 1,600
 * blocks of 16-64 bytes: 30-40 % faster on Win64). A thread that only frees a class (a consumer) or
 * only allocates it (a producer) never grows it: its bin never both trims and empties. A thread's
 * bins grow by FM5_THREAD_CACHE_GROWTH_BYTES at most in all, and limits fall back to their start at
 * every flush, so that the limits stay within FM5_THREAD_CACHE_BYTES. The cost: raw_perf_1 (a ring
 * of 16,361 strings of mixed sizes, where bins fill and trim in turn) runs about 10 % slower than
 * without growth (Win64, 13 pairs: -10.8 % [-18.2, -7.5]), with growth bounded as here or not, and
 * limited to classes up to 256 bytes or not; not explained. */
#define FM5_THREAD_CACHE_GROWTH_BYTES 262144u
#define FM5_THREAD_CACHE_BIN_GROWN_BYTES 131072u
#define FM5_THREAD_CACHE_BIN_GROWN_BLOCKS 2048u
_Static_assert(FM5_THREAD_CACHE_BIN_GROWN_BLOCKS <= UINT16_MAX, "a bin's limit and room are 16-bit");
/* Medium blocks. A thread also keeps the medium blocks it freed last, at most
 * FM5_THREAD_CACHE_MEDIUM_SLOTS of them and FM5_THREAD_CACHE_MEDIUM_BYTES in all, and hands one to a
 * GetMem whose block size is exactly its size (a medium block is cut to its bin's size, so this is
 * "of its bin"). Why: every medium GetMem and FreeMem otherwise takes its arena's lock, and the two
 * locked exchanges were a third of validate47's time (Win64, perf, 2026-12-04). A cached medium block
 * is claimed by compare-and-swap (a second free fails), marked FM5_STATUS_MEDIUM_CACHED (free to walks,
 * leak reports and pointer checks; not merged with or grown into by its neighbours, which want exactly
 * a free block) and is in no bin; its span is not released while it is cached. Only a block of a
 * size among the thread's last FM5_THREAD_CACHE_MEDIUM_SLOTS medium GetMem calls that the cache did
 * not serve is cached: where sizes hardly repeat, caching every block cost a compare-and-swap and a
 * later release for nothing, and kept blocks out of the bins (raw_perf_1, a ring of strings of
 * mixed sizes: 12.6 % [7.5, 19.4] slower, Win64, 5 pairs). A free that finds no slot or too few
 * bytes gives back the oldest cached blocks first, and a medium GetMem that no cached block serves
 * gives them all back before the managers carve or map anything, so that a block held apart never
 * makes an arena cut a new block or map a span that the block, merged, would have served. A thread
 * that stops allocating keeps its last cached blocks, and their spans, until its next medium call,
 * its exit or FastMM_ProcessAllPendingFrees (what Wine reports as peak commit at the end of allocmem
 * and large_block_spread is 6 MB higher for it; their working sets are not). The bytes cover one
 * block of the largest medium size that programs use in loops (validate47's 256 KB) and a few
 * smaller ones. */
#define FM5_THREAD_CACHE_MEDIUM_SLOTS 4u
#define FM5_THREAD_CACHE_MEDIUM_BYTES (512u << 10)

/* FastMM_SetThreadCaches's setting at start-up (FM5_THREAD_CACHES overrides it). */
#define FM5_THREAD_CACHES_BY_DEFAULT 1

/* One class of one thread's cache. */
typedef struct fm5_thread_cache_bin {
    void *first;            /* cached blocks, linked through their first word, newest first */
    uint16_t room;          /* blocks the bin may still take */
    uint16_t block_size;    /* the class's block size; 0 for a class that is not cached */
    uint16_t limit;         /* the bin's limit now, fm5_thread_cache_bin_limit of the class to its
                               fm5_thread_cache_grown_limit: room == limit when empty */
    uint16_t zero;          /* always 0: asm/ compares room with limit and this as one dword */
#ifdef FM5_32BIT
    uint32_t reserved;
#endif
} fm5_thread_cache_bin;
#define FM5_THREAD_CACHE_BIN_SHIFT 4
_Static_assert(sizeof(fm5_thread_cache_bin) == 1u << FM5_THREAD_CACHE_BIN_SHIFT, "asm/ scales a bin by a shift");
_Static_assert(FM5_SMALL_CLASS_COUNT <= 64, "a cache's filled mask has a bit per class slot");

enum fm5_thread_cache_state { FM5_CACHE_UNUSED, FM5_CACHE_LIVE, FM5_CACHE_RETIRED };

/* One thread's cache. The first line is what the fast paths read besides the bin. */
typedef struct FM5_ALIGNED(FM5_CACHE_LINE) fm5_thread_cache {
    volatile uint32_t epoch;       /* the epoch of its last flush; odd, or 0 before the first */
    struct fm5_thread_cache *next; /* every record ever made, for the flush of ended threads */
    uintptr_t thread_handle;       /* fm5_os_thread_handle_open of the owner, 0 if none */
    volatile uint32_t state;       /* fm5_thread_cache_state; changed under the record lock */
    uint32_t grown_bytes;          /* what the bins' limits have grown by, in bytes */
    /* Bit s: bin s has been filled since the thread took the record. Until then the thread has no
     * blocks of its own in the class, and its first ones are chosen against false sharing
     * (thread_cache.c, quiet_block_of_fill). */
    uint64_t filled;
    /* Bit s: bin s was full and gave blocks back since its last fill (its next fill grows it). */
    uint64_t trimmed;
    /* Whether the thread claims blocks plainly, as the sole claimer (blocks/claims.h). */
    fm5_claimer claimer;
    fm5_thread_cache_bin bins[FM5_SMALL_CLASS_COUNT] FM5_ALIGNED(FM5_CACHE_LINE);
    /* Cached medium blocks: slot i holds medium[i], of medium_size[i] bytes, or nothing when that is
     * 0. medium_next is the slot the next free takes (the oldest block's, once all are taken). */
    uint32_t medium_size[FM5_THREAD_CACHE_MEDIUM_SLOTS] FM5_ALIGNED(FM5_CACHE_LINE);
    uint32_t medium_byte_room;     /* of FM5_THREAD_CACHE_MEDIUM_BYTES; read by other threads */
    uint32_t medium_next;
    void *medium[FM5_THREAD_CACHE_MEDIUM_SLOTS];
    /* The sizes of the last medium GetMem calls that no cached block served, in turn from
     * medium_wanted_next: only a block of one of these sizes is cached. */
    uint32_t medium_wanted[FM5_THREAD_CACHE_MEDIUM_SLOTS];
    uint32_t medium_wanted_next;
} fm5_thread_cache;

_Static_assert(offsetof(fm5_thread_cache, claimer) + sizeof(fm5_claimer) <= FM5_CACHE_LINE,
               "the free's fast path reads the claimer record in the cache's first line");

/* Odd while caches may be used (above); asm/ reads it as a dword. */
extern volatile uint32_t fm5_thread_cache_epoch;
extern uint16_t fm5_thread_cache_bin_limit[FM5_SMALL_CLASS_COUNT];
extern uint16_t fm5_thread_cache_grown_limit[FM5_SMALL_CLASS_COUNT];

/* The slow paths behind the inline ones: they create, flush and refill the running thread's cache, or
 * fall back to the managers when caches are off. Also the asm's. */
void *fm5_thread_cache_get_mem_slow(unsigned class_slot, size_t size);
int fm5_thread_cache_free_slow(void *user, fm5_small_span *span);

/* A span whose blocks in use, this one aside, are fewer than an eighth of its blocks: its blocks are
 * not cached, so that cached blocks do not keep many mostly empty spans (and their medium blocks) in
 * use. The count is read without the lock, as a hint. */
#define FM5_THREAD_CACHE_SPARSE_SHIFT 3
FM5_INLINE int fm5_thread_cache_span_is_sparse(const fm5_small_span *span)
{
    uint32_t others = __atomic_load_n(&span->blocks_in_use, __ATOMIC_RELAXED) - 1;
    return (others << FM5_THREAD_CACHE_SPARSE_SHIFT) < span->total_blocks;
}

/* A bin's room, limit and block size are written by its owner alone, as whole words, since
 * FastMM_GetThreadCacheBytes reads them from other threads: the bytes a cache holds are its bins'
 * (limit - room) blocks. No path counts the bytes as blocks come and go. */
FM5_INLINE void fm5_thread_cache_bin_store(uint16_t *field, unsigned value)
{
    __atomic_store_n(field, (uint16_t)value, __ATOMIC_RELAXED);
}

/* The running thread's cache when the epoch allows its use, else NULL. */
FM5_INLINE fm5_thread_cache *fm5_thread_cache_usable(void)
{
    uint32_t epoch = __atomic_load_n(&fm5_thread_cache_epoch, __ATOMIC_RELAXED);
    if (!(epoch & 1))
        return NULL;
    fm5_thread_cache *cache = fm5_os_thread_slot_get();
    return cache && cache->epoch == epoch ? cache : NULL;
}

/* GetMem of a small size: the newest cached block of its class, or the slow path. */
FM5_INLINE void *fm5_thread_cache_get_mem(size_t size)
{
    unsigned slot = fm5_small_lookup[(size + 1) >> FM5_SMALL_GRANULARITY_SHIFT];
    fm5_thread_cache *cache = fm5_thread_cache_usable();
    if (FM5_UNLIKELY(!cache))
        return fm5_thread_cache_get_mem_slow(slot, size);
    fm5_thread_cache_bin *bin = &cache->bins[slot];
    if (FM5_UNLIKELY(!bin->first))
        return bin->block_size ? fm5_thread_cache_get_mem_slow(slot, size) : fm5_small_get_mem(size);
    char *user = bin->first;
    bin->first = *(void **)user;
    fm5_thread_cache_bin_store(&bin->room, bin->room + 1u);
    /* Cached, it is the owner's alone: one store (a walk may read the word meanwhile). */
    fm5_status_store(user, fm5_status_load(user) & ~FM5_STATUS_FREE);
    return user;
}

/* A block the running thread has claimed (marked free by its own compare-and-swap) into a bin with
 * room. */
FM5_INLINE void fm5_thread_cache_link(fm5_thread_cache_bin *bin, void *user)
{
    *(void **)user = bin->first;
    bin->first = user;
    fm5_thread_cache_bin_store(&bin->room, bin->room - 1u);
}

/* The claim of a small block's free by the running thread, whose cache is `cache`: 0 when the block
 * was free already or another free claimed it first. */
FM5_INLINE int fm5_thread_cache_claim(fm5_thread_cache *cache, void *user, uint16_t status)
{
    return !(status & FM5_STATUS_FREE) &&
           fm5_claims_claim_u16(&cache->claimer, fm5_status_word(user), status, (uint16_t)(status | FM5_STATUS_FREE));
}

/* The push of fm5_thread_cache_free, the bin known to have room: the claim, then the link. */
FM5_INLINE int fm5_thread_cache_push(fm5_thread_cache *cache, fm5_thread_cache_bin *bin, void *user,
                                     fm5_small_span *span)
{
    uint16_t status = (uint16_t)fm5_status_load(user);
    /* A debug block's outer block goes back to the managers, which know how to keep it. */
    if (FM5_UNLIKELY(status & FM5_STATUS_HAS_DEBUG_INFO))
        return fm5_small_free(user, span);
    if (FM5_UNLIKELY(!fm5_thread_cache_claim(cache, user, status)))
        return -1;
    fm5_thread_cache_link(bin, user);
    return 0;
}

/* FreeMem of a live small block without debug information whose span is `span`: into the running
 * thread's cache when it has room, else the slow path. Returns 0, or -1 when another thread freed it
 * first (reported by the caller, as fm5_small_free's -1). */
FM5_INLINE int fm5_thread_cache_free(void *user, fm5_small_span *span)
{
    fm5_thread_cache *cache = fm5_thread_cache_usable();
    if (FM5_UNLIKELY(!cache))
        return fm5_thread_cache_free_slow(user, span);
    /* A block of a span that is nearly empty goes back, so that the span can be released: a cached
     * block would keep it in use. */
    if (FM5_UNLIKELY(fm5_thread_cache_span_is_sparse(span)))
        return fm5_small_free(user, span);
    fm5_thread_cache_bin *bin = &cache->bins[span->class_slot];
    /* A class that is not cached has no room: the managers'. A full bin is trimmed by the slow path;
     * an empty one that was never filled takes only a block whose lines no live block shares (the
     * thread's first block of the class). */
    if (FM5_UNLIKELY(bin->room == 0) ||
        FM5_UNLIKELY(bin->room == bin->limit && !(cache->filled & ((uint64_t)1 << span->class_slot))))
        return bin->block_size ? fm5_thread_cache_free_slow(user, span) : fm5_small_free(user, span);
    return fm5_thread_cache_push(cache, bin, user, span);
}

/* A medium block of `size` bytes (a bin size) from the managers, the size noted as wanted in the
 * running thread's cache (which is brought up to date first, as the small slow paths do). */
void *fm5_thread_cache_get_medium_slow(size_t size, int *zeroed);

/* GetMem of a medium size: a cached medium block of exactly the size it needs, or the managers'.
 * *zeroed as fm5_medium_allocate_noting_zero says (a cached block has been used: 0). */
FM5_INLINE void *fm5_thread_cache_get_medium(size_t user_size, int *zeroed)
{
    *zeroed = 0;
    size_t size = fm5_medium_block_size_for(user_size);
    fm5_thread_cache *cache = fm5_thread_cache_usable();
    if (cache) {
        for (unsigned i = 0; i < FM5_THREAD_CACHE_MEDIUM_SLOTS; i++) {
            if (cache->medium_size[i] != size)
                continue;
            char *user = cache->medium[i];
            cache->medium_size[i] = 0;
            __atomic_store_n(&cache->medium_byte_room, cache->medium_byte_room + (uint32_t)size, __ATOMIC_RELAXED);
            /* The owner's alone while cached: one store (a walk may read the word meanwhile). */
            fm5_status_store(user, FM5_STATUS_MEDIUM);
            return user;
        }
    }
    return fm5_thread_cache_get_medium_slow(size, zeroed);
}

/* FreeMem of a block that fm5_release_is_live_medium_block proved: into the running thread's cache
 * (when caches are usable), else to its manager. Returns 0, or -1 when another thread freed it first
 * (reported by the caller, as fm5_medium_free's -1). */
int fm5_thread_cache_free_medium(void *user);

/* If `user` is a medium block in the running thread's cache, it goes back to its manager now: the
 * growth in place of its neighbour (FastMM5's rule) may then use it, as it would had it not been
 * cached. A block in another thread's cache stays there, and counts as a neighbour in use. */
void fm5_thread_cache_give_back_medium(void *user);

/* The running thread's cache goes back to the managers now (FastMM_ProcessAllPendingFrees, debug
 * mode's entry, FastMM_SetArenaCounts); other threads' at their next call. */
void fm5_thread_cache_flush_current(void);
/* Every cache must be flushed before its next use: the epoch moves on (keeping its parity). */
void fm5_thread_cache_request_flush(void);
/* Flushes the caches of threads that ended without their exit call (TerminateThread). */
void fm5_thread_cache_flush_ended_threads(void);

/* Why caches are not used: each reason is a bit; the epoch is odd only while none is set. The modes
 * that send GetMem or FreeMem to their C paths are reasons too, so that an odd epoch rules them out:
 * the asm fast paths test only the epoch before a cache's pop or push, and the three mode flags only
 * off it (one load against four: validate45 and glibc_simple 5-6 % faster on both architectures,
 * 2026-12-07). */
enum {
    FM5_CACHE_OFF_BY_SETTING = 1,   /* FastMM_SetThreadCaches(0) */
    FM5_CACHE_OFF_IN_DEBUG_MODE = 2,
    FM5_CACHE_OFF_NO_THREAD_SLOT = 4,
    FM5_CACHE_OFF_IN_ERASE_MODE = 8,     /* either erase mode (debug/erase_modes.h) */
    FM5_CACHE_OFF_SHARED_MANAGER = 16    /* another module's manager in use (api/sharing.h) */
};
void fm5_thread_cache_hold(unsigned reason, int held);
/* FastMM_SetThreadCaches: returns the previous setting. */
int fm5_thread_cache_set_enabled(int enabled);
int fm5_thread_cache_enabled(void);
/* Bytes in every cache now (a snapshot: the owners keep changing theirs), and the number of live
 * caches. */
size_t fm5_thread_cache_bytes(unsigned *caches);

void fm5_thread_cache_initialize(void);
void fm5_thread_cache_shut_down(void);

#endif
