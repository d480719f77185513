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

FM5_INLINE void fm5_ring_init(fm5_ring *sentinel)
{
    sentinel->next = sentinel->prev = sentinel;
}

FM5_INLINE int fm5_ring_is_empty(const fm5_ring *sentinel)
{
    return sentinel->next == sentinel;
}

FM5_INLINE void fm5_ring_insert_first(fm5_ring *sentinel, fm5_ring *node)
{
    node->next = sentinel->next;
    node->prev = sentinel;
    sentinel->next->prev = node;
    sentinel->next = node;
}

FM5_INLINE void fm5_ring_remove(fm5_ring *node)
{
    FM5_ASSERT(node->next->prev == node && node->prev->next == node);
    node->prev->next = node->next;
    node->next->prev = node->prev;
}

#endif
