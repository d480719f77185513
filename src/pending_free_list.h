/* Lock-free LIFO of blocks freed while their manager was locked. The link lives in the block's first
 * pointer; the manager that owns the list releases its blocks the next time it holds its lock. */
#ifndef FM5_PENDING_FREE_LIST_H
#define FM5_PENDING_FREE_LIST_H

#include "platform.h"

/* Returns 0 (and pushes nothing) when the block is already the head: a repeated free of the block just
 * queued, which would otherwise link the block to itself. */
FM5_INLINE int fm5_pending_push(void *volatile *head, void *block)
{
    for (;;) {
        void *old = fm5_atomic_load_ptr(head);
        if (FM5_UNLIKELY(old == block))
            return 0;
        *(void **)block = old;
        if (fm5_cas_ptr(head, old, block))
            return 1;
    }
}

FM5_INLINE void *fm5_pending_take_all(void *volatile *head)
{
    if (!*head)
        return NULL;
    return __atomic_exchange_n(head, NULL, __ATOMIC_ACQ_REL);
}

#endif
