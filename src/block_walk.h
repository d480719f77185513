/* The internal view of a walk over every block, shared by FastMM_WalkBlocks and the heap statistics. */
#ifndef FM5_BLOCK_WALK_H
#define FM5_BLOCK_WALK_H

#include "platform.h"
#include "fm5.h"

typedef struct fm5_walk_item {
    void *address;        /* user address (blocks) or base (spans) */
    size_t block_size;
    size_t usable_size;
    unsigned kind;        /* a FastMM_BlockKind */
    unsigned arena;
    int is_free;
    int is_unused;        /* space not yet carved by sequential feed; is_free is set too */
} fm5_walk_item;

/* Returns non-zero to stop the walk. */
typedef int (*fm5_walk_visitor)(const fm5_walk_item *item, void *context);

enum fm5_walk_result { FM5_WALK_COMPLETE = 1, FM5_WALK_INCOMPLETE = 0, FM5_WALK_STOPPED = -1 };

int fm5_walk_all(fm5_walk_visitor visitor, void *context, DWORD timeout_ms);

/* The block the program holds behind a walked item, if the item is a live block: for a debug block its
 * user pointer and requested size, for an ordinary one its address and usable size. Returns 0 for
 * spans, free, pending and unfed space, and debug blocks on their way to being freed. */
typedef struct fm5_live_user_block {
    const void *user;
    size_t size;
    int is_debug_block;
} fm5_live_user_block;

int fm5_walk_item_live_user_block(const fm5_walk_item *item, fm5_live_user_block *block);

/* Per manager; each returns an fm5_walk_result. */
int fm5_large_walk(fm5_walk_visitor visitor, void *context, DWORD timeout_ms);
int fm5_medium_walk(fm5_walk_visitor visitor, void *context, DWORD timeout_ms);
/* Walks one small-block span; called with the owning medium arena locked. */
int fm5_small_walk_span(void *span, fm5_walk_visitor visitor, void *context, DWORD timeout_ms);

#endif
