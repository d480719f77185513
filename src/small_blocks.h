/* Small blocks: up to 2,622 user bytes in FastMM5's size classes, cut from spans that are themselves
 * medium blocks. Each arena has one manager per class. */
#ifndef FM5_SMALL_BLOCKS_H
#define FM5_SMALL_BLOCKS_H

#include "platform.h"
#include "size_limits.h"
#include "arena_counts.h"
#include "block_status.h"

struct fm5_small_manager;

/* The first 64 bytes of a span; its last two bytes are the first block's status word. */
typedef struct fm5_small_span {
    struct fm5_small_span *next_partially_free;
    struct fm5_small_span *prev_partially_free;
    void *first_free_block;
    struct fm5_small_manager *manager;
    uint32_t total_blocks;
    uint32_t blocks_in_use;     /* blocks not yet fed count as in use */
    /* The span's address mixed with a constant while the span holds small blocks, 0 otherwise: FreeMem
     * checks it, in the cache line it reads anyway, before trusting the span. */
    uintptr_t identity_tag;
    uint8_t reserved[64 - 5 * FM5_POINTER_SIZE - 8];
} fm5_small_span;

#define FM5_SMALL_SPAN_TAG_KEY ((uintptr_t)0x5EA5C0DE5EA5C0DEull)

FM5_INLINE uintptr_t fm5_small_span_tag(const fm5_small_span *span)
{
    return (uintptr_t)span ^ FM5_SMALL_SPAN_TAG_KEY;
}

#define FM5_SMALL_SPAN_HEADER_SIZE 64u
_Static_assert(sizeof(fm5_small_span) == FM5_SMALL_SPAN_HEADER_SIZE, "span header must end at the first block");

typedef struct FM5_ALIGNED(FM5_CACHE_LINE) fm5_small_manager {
    fm5_small_span *first_partially_free;    /* circular list; the manager is its sentinel */
    fm5_small_span *last_partially_free;
    /* Sequential feed: low 32 bits the span offset of the last block handed out, high 32 bits a counter
     * that makes every change distinct to compare-and-swap. */
    volatile uint64_t feed;
    fm5_small_span *volatile feed_span;
    void *volatile pending_free_list;
    fm5_lock locked;
    uint16_t block_size;
    uint8_t arena;
    uint8_t class_index;
    uint32_t block_size_reciprocal;          /* ceil(2^32 / block_size), to test block boundaries */
    uint32_t minimum_span_size;
    uint32_t optimal_span_size;
} fm5_small_manager;

extern fm5_small_manager fm5_small_managers[FM5_SMALL_ARENA_COUNT][FM5_SMALL_CLASS_COUNT];
extern size_t fm5_small_contention_count;

FM5_INLINE fm5_small_span *fm5_small_span_of(const void *user, unsigned status)
{
    uintptr_t line_mask = ((uintptr_t)1 << FM5_SMALL_LINE_SHIFT) - 1;
    unsigned flag_mask = (1u << FM5_SMALL_OFFSET_SHIFT) - 1;
    return (fm5_small_span *)(((uintptr_t)user & ~line_mask) -
                              ((uintptr_t)(status & ~flag_mask) << (FM5_SMALL_LINE_SHIFT - FM5_SMALL_OFFSET_SHIFT)));
}

FM5_INLINE int fm5_is_small_manager(const void *manager)
{
    uintptr_t offset = (uintptr_t)manager - (uintptr_t)fm5_small_managers;
    return offset < sizeof fm5_small_managers && offset % sizeof(fm5_small_manager) == 0;
}

/* No span is this long: a larger offset is not a block of the span (and keeps the product below exact). */
#define FM5_SMALL_MAXIMUM_BLOCK_OFFSET (1u << 20)

/* Is `user` exactly on a block boundary of `span`, among its blocks? */
FM5_INLINE int fm5_small_is_block_start(const fm5_small_span *span, const fm5_small_manager *manager,
                                        const void *user)
{
    uintptr_t offset = (uintptr_t)user - ((uintptr_t)span + FM5_SMALL_SPAN_HEADER_SIZE);
    uint32_t index = (uint32_t)(((uint64_t)(uint32_t)offset * manager->block_size_reciprocal) >> 32);
    return offset < FM5_SMALL_MAXIMUM_BLOCK_OFFSET && (uintptr_t)index * manager->block_size == offset &&
           index < span->total_blocks;
}

void fm5_small_initialize(void);
void *fm5_small_get_mem(size_t size);
/* For a block that fm5_identify_block proved to be a live small block. Returns 0, or -1 if it turned
 * out to be free already (a concurrent double free). */
int fm5_small_free(void *user, fm5_small_span *span);
int fm5_small_process_pending_frees(int wait);
/* The end of a free under the manager's lock: releases the blocks queued on the manager meanwhile,
 * unlocks and returns 0 (FreeMem's result). fm5_small_free ends with it; the NASM FreeMem tail-jumps
 * here when the queue is not empty. */
int fm5_small_drain_pending_and_unlock(fm5_small_manager *manager);

#endif
