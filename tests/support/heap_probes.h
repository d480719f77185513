/*
 * heap_probes.h — looking at fm5's heap through the public API: block walk snapshots, the baseline
 * counts, three adjacent medium blocks, and an arena lock held from a helper thread.
 */
#ifndef FM5_TEST_HEAP_PROBES_H
#define FM5_TEST_HEAP_PROBES_H

#include "arch.h"

#include "fm5.h"

/* Every block kind (no span kinds), so that the addresses of a walk are unique. */
#define TU_BLOCK_KINDS (FastMM_SmallBlock | FastMM_MediumBlock | FastMM_LargeBlock)

/* ------------------------------------------------------------------------------------------------
 * Block walk snapshots: walk once, then look addresses up with a binary search
 * ---------------------------------------------------------------------------------------------- */

typedef struct tu_walk {
    FastMM_WalkBlockInfo *items;
    size_t count;
    size_t capacity;
    int out_of_memory;
    int result; /* what FastMM_WalkBlocks returned */
} tu_walk;

/* Snapshot of the blocks of `kinds` (only block kinds, so that addresses are unique), sorted by
 * address. The array comes from the CRT heap, never from fm5; tu_walk_free releases it. */
void tu_walk_take(tu_walk *w, unsigned kinds, int used_only);
void tu_walk_free(tu_walk *w);

/* The snapshot's entry of the block at `address`, or NULL. */
const FastMM_WalkBlockInfo *tu_walk_find(const tu_walk *w, const void *address);

/* Counts used blocks of every kind; with the allocated byte count it is a test's baseline. */
size_t tu_used_block_count(void);
size_t tu_allocated_bytes(void);

/* Returns how many pointers in p[0..n) equal an earlier one (after sorting p in place): a block
 * handed out twice. */
size_t tu_count_duplicates(void **p, size_t n);

/* ------------------------------------------------------------------------------------------------
 * Three adjacent medium blocks
 *
 * Some rules (in-place growth, double-free detection) are only promised when a block's neighbour is
 * in a known state. Rather than guessing how fm5 lays blocks out, a test allocates a few blocks and
 * asks the walk which of them are adjacent.
 * ---------------------------------------------------------------------------------------------- */

#define TU_CHAIN_POOL 16

typedef struct tu_medium_chain {
    void *pool[TU_CHAIN_POOL]; /* every block allocated for the search; chain members included */
    size_t pool_count;
    void *first, *middle, *last; /* first is followed directly by middle, middle by last */
    size_t first_block_size, middle_block_size;
} tu_medium_chain;

/* Allocates medium blocks of `size` until three are adjacent in memory, in address order.
 * Returns 1 when found. The caller frees the pool with tu_medium_chain_release. */
int tu_medium_chain_make(tu_medium_chain *c, size_t size);

/* Frees every pool block except those set to NULL by the caller (freed or moved already). */
void tu_medium_chain_release(tu_medium_chain *c);

/* Marks a pool entry as no longer owned by the pool (freed, or replaced by a realloc). */
void tu_medium_chain_forget(tu_medium_chain *c, void *p);

/* ------------------------------------------------------------------------------------------------
 * Holding an arena lock from a helper thread
 *
 * FastMM_WalkBlocks calls its callback with the lock of the arena being walked held. A helper thread
 * walks the given kinds and, on reaching the target block, signals `on_target` and parks until
 * `release` is set: meanwhile the arena that owns the target is locked, so frees of its blocks must
 * take the pending-free path. Parking only on the target (not on any block) pins the right arena.
 * ---------------------------------------------------------------------------------------------- */

typedef struct tu_lock_holder {
    const void *target;
    unsigned kinds;
    tu_signal on_target;
    tu_signal release;
    tu_thread thread;
    tu_atomic_long reached;
    tu_atomic_long walk_result;
} tu_lock_holder;

/* Starts the helper; returns 1 once it holds the lock of the arena that owns `target`. */
int tu_lock_holder_start(tu_lock_holder *h, const void *target, unsigned kinds);

/* Lets the helper go and waits for it. Returns 1 when it finished in time. */
int tu_lock_holder_stop(tu_lock_holder *h);

#endif /* FM5_TEST_HEAP_PROBES_H */
