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
    size_t block_size;                   /* bytes committed, header included */
    size_t user_size;                    /* bytes requested */
    uint32_t segment_count;              /* OS mappings: more than one after in-place growth */
    uint8_t reserved[64 - 5 * FM5_POINTER_SIZE - 4 - 2];
    uint16_t status;                     /* the status word before the user address */
} fm5_large_header;

/* One large arena. Its gate's lock guards the ring and the headers' sizes (block_size, segment_count,
 * read by walks); the mappings themselves are made and unmapped outside it. */
typedef struct FM5_ALIGNED(FM5_CACHE_LINE) fm5_large_manager {
    fm5_ring blocks;                     /* sentinel of the arena's blocks */
    fm5_arena_gate gate;
    uint32_t arena;
} fm5_large_manager;

_Static_assert(sizeof(fm5_large_header) == FM5_LARGE_HEADER_SIZE, "status word must sit just before the user area");
extern fm5_large_manager fm5_large_managers[FM5_LARGE_ARENA_COUNT];
extern size_t fm5_large_contention_count;

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
void *fm5_large_get_mem(size_t user_size);
int fm5_large_free(void *user);
/* Resizes in place when the rules allow; returns 1 if it did. */
int fm5_large_resize_in_place(void *user, size_t new_user_size);
int fm5_large_process_pending_frees(int wait);

#endif
