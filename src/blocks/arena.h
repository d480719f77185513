/* The arena skeleton the three block managers share, written once: the gate of an arena (its lock
 * and its pending-free list), the allocation scan over the arenas, the free that never waits, and the
 * drain of the pending frees on unlock.
 *
 * Every function takes the manager's own steps as function pointers; they are always inlined with
 * constant arguments, so the compiler calls the steps directly and the hot paths pay nothing for the
 * sharing.
 *
 * Why it cannot deadlock (docs/design.md has the whole lock order): a thread that finds a gate locked
 * never waits for it here; it moves to the next arena, or queues its free on the pending list.
 * Waiting happens only in fm5_lock_with_timeout, on rare paths that hold no other arena's lock or that
 * take locks in the order small -> medium (a new span) and medium -> small (a walk, which waits with a
 * timeout and skips the span).
 *
 * Why the pending-free list is safe without a counter against ABA: pushes are lock-free, but the only
 * pop takes the whole list at once with an exchange (fm5_pending_take_all), under the gate's lock. A
 * push's compare-and-swap only ever succeeds when the head is the node it read, and whatever happened
 * to that node meanwhile, linking the new block in front of it is right: the block goes to the list
 * as it is now. No node is ever removed from the middle, so no stale `next` is ever followed. */
#ifndef FM5_ARENA_H
#define FM5_ARENA_H

#include "base/platform.h"
#include "base/os.h"
#include "blocks/claims.h"

typedef struct fm5_arena_gate {
    /* Blocks freed while the lock was held, linked through their first pointer; the next holder
     * releases them. */
    void *volatile pending_free_list;
    fm5_lock locked;
    /* The manager's place in its arena's row: a small manager's class slot, by which the thread caches
     * index their bins (blocks/thread_cache.h); 0 for the others. Where 64-bit padding would be. */
    uint32_t row_index;
} fm5_arena_gate;

/* ---- the pending-free list --------------------------------------------------------------------- */

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
    if (!fm5_atomic_load_ptr(head))
        return NULL;
    return __atomic_exchange_n(head, NULL, __ATOMIC_ACQ_REL);
}

/* ---- drain and unlock -------------------------------------------------------------------------- */

/* Releases one queued block, under the gate's lock; `context` is the manager's (a manager, or where a
 * manager collects what it releases after unlocking). */
typedef void (*fm5_arena_release_fn)(void *context, void *block);

/* With the gate locked: releases every block queued so far. */
FM5_INLINE void fm5_arena_drain(fm5_arena_gate *gate, fm5_arena_release_fn release, void *context)
{
    FM5_ASSERT(gate->locked);
    char *block = fm5_pending_take_all(&gate->pending_free_list);
    while (block) {
        char *next = *(char **)block;
        release(context, block);
        block = next;
    }
}

/* The end of every locked section that may have made others queue frees: drain, then unlock. A block
 * queued after the drain waits for the next holder (or FastMM_ProcessAllPendingFrees). */
FM5_INLINE void fm5_arena_unlock(fm5_arena_gate *gate, fm5_arena_release_fn release, void *context)
{
    fm5_arena_drain(gate, release, context);
    fm5_unlock(&gate->locked);
}

/* FastMM_ProcessAllPendingFrees for one gate: drains it if its lock can be had (waiting for it when
 * `wait`). Returns 0 if blocks stay queued because the lock was busy. */
FM5_INLINE int fm5_arena_process_pending(fm5_arena_gate *gate, int wait, fm5_arena_release_fn release,
                                         void *context)
{
    if (!fm5_atomic_load_ptr(&gate->pending_free_list))
        return 1;
    if (!(wait ? fm5_lock_with_timeout(&gate->locked, FM5_WAIT_FOREVER) : fm5_try_lock(&gate->locked)))
        return 0;
    fm5_arena_unlock(gate, release, context);
    return 1;
}

/* ---- the free that never waits ----------------------------------------------------------------- */

/* How a manager's status word says "live" and "queued": live when (status & live_mask) == live_value;
 * a queued block gets queued_mark, which makes it not live, so that a second free of it fails. */
typedef struct fm5_arena_status_rule {
    uint16_t live_mask;
    uint16_t live_value;
    uint16_t queued_mark;
} fm5_arena_status_rule;

/* Claims a live block for its free: the queued mark by compare-and-swap, so that of two frees of one
 * block racing (one queued, one under the lock, or a thread cache's claim) exactly one wins. */
FM5_INLINE int fm5_arena_claim(volatile uint16_t *status, fm5_arena_status_rule rule)
{
    fm5_claims_prepare();
    uint16_t old = __atomic_load_n(status, __ATOMIC_RELAXED);
    return (old & rule.live_mask) == rule.live_value && fm5_cas_u16(status, old, (uint16_t)(old | rule.queued_mark));
}

/* Releases a block its caller has claimed (it carries the queued mark): under the gate when the lock
 * is free now (`release_locked`, then the drain), else pushed on the gate's pending list. Never waits. */
FM5_INLINE void fm5_arena_release_claimed(fm5_arena_gate *gate, void *block, fm5_arena_release_fn release_locked,
                                          fm5_arena_release_fn release_queued, void *context)
{
    if (fm5_try_lock(&gate->locked)) {
        release_locked(context, block);
        fm5_arena_unlock(gate, release_queued, context);
    } else {
        fm5_pending_push(&gate->pending_free_list, block);
    }
}

/* Frees `block` under its owner's gate when the lock is free now (`release_locked`, then the drain),
 * else pushes it on the gate's pending list; claimed first either way (fm5_arena_claim), so both
 * releases meet a block that carries the queued mark until they write its new state. The lock alone
 * would not do: the queued path and the thread caches claim without it, and a check under the lock
 * followed by plain writes let one of them claim the block in between (before 2026-12-04). Returns
 * 0, or -1 if the block was not live (freed before, or by another thread meanwhile). */
FM5_INLINE int fm5_arena_free(fm5_arena_gate *gate, void *block, volatile uint16_t *status, fm5_arena_status_rule rule,
                              fm5_arena_release_fn release_locked, fm5_arena_release_fn release_queued, void *context)
{
    if (!fm5_arena_claim(status, rule))
        return -1;
    fm5_arena_release_claimed(gate, block, release_locked, release_queued, context);
    return 0;
}

/* ---- the allocation scan ----------------------------------------------------------------------- */

/* One try at one arena, which must not wait for its lock. Returns a block, or NULL with *final set
 * when NULL is the answer (the OS refused memory), or NULL to go on to the next arena. */
typedef void *(*fm5_arena_attempt_fn)(void *arena, void *context, int *final);
/* Called when every arena was busy, before the yield: returns the arena where the next first pass
 * starts (the small managers' arena affinity, blocks/arena_affinity.h). */
typedef unsigned (*fm5_arena_contention_fn)(void *context);

/* FastMM5's scan: `first_pass` on every arena from `first_pass_start`, wrapping once (may be NULL; for
 * idle arenas that probably have a free block, and lock-free paths), then `second_pass` on every arena
 * from arena 0 (which takes any lock it can get and may grow the arena: new spans still start in the
 * low arenas), and when every arena was busy, counts the contention, asks `on_contention` (may be NULL)
 * where to start next, yields and starts again. */
FM5_INLINE void *fm5_arena_allocate(void *first_arena, size_t arena_stride, unsigned arena_count,
                                    unsigned first_pass_start, fm5_arena_attempt_fn first_pass,
                                    fm5_arena_attempt_fn second_pass, fm5_arena_contention_fn on_contention,
                                    void *context, size_t *contention_count)
{
    FM5_ASSERT(first_pass_start < arena_count);
    for (;;) {
        int final = 0;
        if (first_pass) {
            unsigned a = first_pass_start;
            for (unsigned tried = 0; tried < arena_count; tried++) {
                void *block = first_pass((char *)first_arena + a * arena_stride, context, &final);
                if (block || final)
                    return block;
                if (++a == arena_count)
                    a = 0;
            }
        }
        for (unsigned a = 0; a < arena_count; a++) {
            void *block = second_pass((char *)first_arena + a * arena_stride, context, &final);
            if (block || final)
                return block;
        }
        /* Every thread that gives up counts: an atomic add, or increments of several are lost. */
        __atomic_add_fetch(contention_count, 1, __ATOMIC_RELAXED);
        if (on_contention)
            first_pass_start = on_contention(context);
        fm5_os_yield();
    }
}

#endif
