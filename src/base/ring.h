/* An intrusive circular doubly-linked list whose sentinel is a node of the owner: the small managers'
 * partially-free spans, the medium arenas' spans and the large arenas' blocks. A node is always the
 * first member of its struct, so that a node's address is its struct's address (asm/ compares a span
 * with its manager's address to find the end of the list). */
#ifndef FM5_RING_H
#define FM5_RING_H

#include "base/platform.h"

typedef struct fm5_ring {
    struct fm5_ring *next;
    struct fm5_ring *prev;
} fm5_ring;

/* The struct that holds `node` as its member `member`. */
#define FM5_CONTAINER_OF(node, type, member) ((type *)(void *)((char *)(node) - offsetof(type, member)))

/* Rings change only under their owner's lock, but an arena's first pass peeks at its ring without
 * it (fm5_ring_is_empty_hint): every store of a `next` link is one whole relaxed atomic store (a plain
 * mov on x86) so that the peek reads an old or a new link, never a torn one. */
FM5_INLINE void fm5_ring_set_next(fm5_ring *node, fm5_ring *next)
{
    __atomic_store_n(&node->next, next, __ATOMIC_RELAXED);
}

FM5_INLINE void fm5_ring_init(fm5_ring *sentinel)
{
    fm5_ring_set_next(sentinel, sentinel);
    sentinel->prev = sentinel;
}

FM5_INLINE int fm5_ring_is_empty(const fm5_ring *sentinel)
{
    return sentinel->next == sentinel;
}

/* Without the lock: a guess that may be stale by the time it is used. */
FM5_INLINE int fm5_ring_is_empty_hint(const fm5_ring *sentinel)
{
    return __atomic_load_n(&sentinel->next, __ATOMIC_RELAXED) == sentinel;
}

FM5_INLINE void fm5_ring_insert_first(fm5_ring *sentinel, fm5_ring *node)
{
    fm5_ring_set_next(node, sentinel->next);
    node->prev = sentinel;
    sentinel->next->prev = node;
    fm5_ring_set_next(sentinel, node);
}

FM5_INLINE void fm5_ring_remove(fm5_ring *node)
{
    FM5_ASSERT(node->next->prev == node && node->prev->next == node);
    fm5_ring_set_next(node->prev, node->next);
    node->next->prev = node->prev;
}

#endif
