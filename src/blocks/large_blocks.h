/* Large blocks: more than 558,904 user bytes, each its own OS mapping in 64 KB granules,
 * grown in place by claiming the address range that follows when it is free. */
#ifndef FM5_LARGE_BLOCKS_H
#define FM5_LARGE_BLOCKS_H

#include "base/platform.h"
#include "base/ring.h"
#include "blocks/geometry.h"
#include "blocks/arena.h"

struct fm5_large_manager;

typedef struct fm5_large_header {
    fm5_ring ring;                       /* the arena's blocks, for walking */
    struct fm5_large_manager *manager;
    size_t block_size;                   /* the block's bytes, header included: what walks and sizes see */
    size_t user_size;                    /* bytes requested */
    size_t mapped_size;                  /* bytes mapped, header included, all segments: block_size or,
                                            for a cached region handed to a smaller request, more */
    uint32_t segment_count;              /* OS mappings: more than one after in-place growth */
    uint32_t surplus_granules;           /* a cached region of more than twice the request: its bytes
                                            beyond the request, in granules, counted in the cache's
                                            surplus until the block is freed; else 0 */
    uint8_t recycled;                    /* 1 when the region came from the cache: not zero-filled */
    uint8_t reserved[64 - 6 * FM5_POINTER_SIZE - 4 - 4 - 1 - 2];
    uint16_t status;                     /* the status word before the user address */
} fm5_large_header;

/* One large arena. Its gate's lock guards the ring and the headers' sizes (block_size, mapped_size,
 * segment_count, read by walks); the mappings themselves are made and unmapped outside it. */
typedef struct FM5_ALIGNED(FM5_CACHE_LINE) fm5_large_manager {
    fm5_ring blocks;                     /* sentinel of the arena's blocks */
    fm5_arena_gate gate;
    uint32_t arena;
} fm5_large_manager;

_Static_assert(sizeof(fm5_large_header) == FM5_LARGE_HEADER_SIZE, "status word must sit just before the user area");
extern fm5_large_manager fm5_large_managers[FM5_MAXIMUM_ARENA_COUNT];
extern size_t fm5_large_contention_count;
/* Arenas in use, the first of fm5_large_managers: fixed while fm5 holds memory (fm5.h). */
extern uint32_t fm5_large_arena_count;

FM5_INLINE fm5_large_header *fm5_large_header_of(const void *user)
{
    return (fm5_large_header *)((char *)user - FM5_LARGE_HEADER_SIZE);
}

FM5_INLINE int fm5_is_large_manager(const void *manager)
{
    uintptr_t offset = (uintptr_t)manager - (uintptr_t)fm5_large_managers;
    return offset < sizeof fm5_large_managers && offset % sizeof(fm5_large_manager) == 0;
}

void fm5_large_initialize(void);
/* Only while fm5 holds no memory and nothing allocates (api/tuning.c). */
void fm5_large_set_arena_count(unsigned count);
void *fm5_large_get_mem(size_t user_size);
int fm5_large_free(void *user);
/* Resizes in place when the rules allow; returns 1 if it did. */
int fm5_large_resize_in_place(void *user, size_t new_user_size);
int fm5_large_process_pending_frees(int wait);

/* ---- the cache of freed regions ----------------------------------------------------------------
 * A program that frees and allocates buffers of a few MiB in a loop would pay the OS twice a round
 * (a VirtualAlloc and a VirtualFree, then a page fault per page it touches). So a freed large block of
 * one mapping goes to a small cache instead of back to the OS, and an allocation takes the smallest
 * cached region that holds it before it maps a new one (the rest is the block's slack, which in-place
 * growth uses first). Bounded three ways: FM5_LARGE_CACHE_ENTRIES regions, a byte limit
 * (FastMM_SetLargeBlockCacheLimit; FM5_LARGE_CACHE_DEFAULT_BYTES by default, 0 turns the cache off),
 * and age: a region unused for FM5_LARGE_CACHE_AGE_MS goes back to the OS at the next large operation.
 * When a region must go to make room, the smallest goes: a large region serves more requests. A
 * region of more than twice the request is taken only while the surplus of all live blocks that
 * took one (their bytes beyond the request) stays within the byte limit too, so that small blocks
 * on large regions never hold more than the limit again. Mapped beyond what blocks asked for, then:
 * the cache (at most the limit), that surplus (at most the limit, counted as taken: an in-place
 * shrink to no less than half does not add to it), and the slack of blocks on regions of at most
 * twice their request (at most their own size each, as before the surplus rule).
 * FastMM_ProcessAllPendingFrees returns every cached region, and so does an allocation that the usage
 * limit or the OS would refuse, before it tries again. A cached region stays mapped, counted in the
 * memory usage and in the address map, its header marked free, so a stale pointer into it is "already
 * free"; walks see no block there, the heap status counts it as unused. Debug mode caches nothing (a
 * freed large debug block must fault). */
#define FM5_LARGE_CACHE_ENTRIES 8u
#define FM5_LARGE_CACHE_DEFAULT_BYTES (32u << 20)
#define FM5_LARGE_CACHE_AGE_MS 1000u

/* Returns every cached region to the OS. */
void fm5_large_cache_release_all(void);
/* Bytes held by the cache (mapped, counted in the usage, in no block). */
size_t fm5_large_cache_bytes(void);

#endif
