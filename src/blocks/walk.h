/* Walking every block: the item a walk reports, the per-manager walks, and fm5_walk_all, which
 * composes them. The managers know only the item and the visitor; the walk of a medium span hands a
 * small-block span it meets to the walker it is given, so that medium blocks never call up into small
 * blocks. Lock order of a walk: a medium arena's lock, then (inside) the small managers' locks of the
 * spans it meets; large arenas on their own (docs/design.md). */
#ifndef FM5_WALK_H
#define FM5_WALK_H

#include "base/platform.h"
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

/* FM5_WALK_NOT_A_SPAN comes only from a span walker: the block it was given stopped being a span
 * between the caller's look and the span's lock (its last block was freed meanwhile); the caller then
 * reports it as one of its own blocks. */
enum fm5_walk_result { FM5_WALK_COMPLETE = 1, FM5_WALK_INCOMPLETE = 0, FM5_WALK_STOPPED = -1, FM5_WALK_NOT_A_SPAN = 2 };

/* Walks the blocks of one span that a manager found inside another manager's block; returns an
 * fm5_walk_result. */
typedef int (*fm5_span_walker)(void *span, fm5_walk_visitor visitor, void *context, uint32_t timeout_ms);

/* Every block and span. An arena whose lock is not obtained within `timeout_ms` is left out, and the
 * result is FM5_WALK_INCOMPLETE. */
int fm5_walk_all(fm5_walk_visitor visitor, void *context, uint32_t timeout_ms);

/* Per manager; each returns an fm5_walk_result. */
int fm5_large_walk(fm5_walk_visitor visitor, void *context, uint32_t timeout_ms);
int fm5_medium_walk(fm5_walk_visitor visitor, void *context, uint32_t timeout_ms, fm5_span_walker small_span_walker);
/* Walks one small-block span; called with the owning medium arena locked. */
int fm5_small_walk_span(void *span, fm5_walk_visitor visitor, void *context, uint32_t timeout_ms);

#endif
