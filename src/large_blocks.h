/* Large blocks: more than 558,904 user bytes, each its own VirtualAlloc region in 64 KB granules,
 * grown in place by claiming the address range that follows when it is free. */
#ifndef FM5_LARGE_BLOCKS_H
#define FM5_LARGE_BLOCKS_H

#include "platform.h"
#include "size_limits.h"
#include "arena_counts.h"

struct fm5_large_manager;

typedef struct fm5_large_header {
    struct fm5_large_header *next;       /* per-arena ring, for walking */
    struct fm5_large_header *prev;
    struct fm5_large_manager *manager;
    size_t block_size;                   /* bytes committed, header included */
    size_t user_size;                    /* bytes requested */
    uint32_t segment_count;              /* VirtualAlloc regions: more than one after in-place growth */
    uint8_t reserved[64 - 5 * FM5_POINTER_SIZE - 4 - 2];
    uint16_t status;                     /* the status word before the user address */
} fm5_large_header;

typedef struct FM5_ALIGNED(FM5_CACHE_LINE) fm5_large_manager {
    fm5_large_header *ring_next;         /* the manager is the sentinel of its ring */
    fm5_large_header *ring_prev;
    fm5_lock locked;
    uint32_t arena;
    void *volatile pending_free_list;
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
