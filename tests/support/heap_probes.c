/*
 * heap_probes.c — the walks, chains and lock holder of heap_probes.h.
 */
#include "heap_probes.h"

#include <stdlib.h>
#include <string.h>

/* ---- Block walk snapshots ---------------------------------------------------------------------- */

/* Runs with an fm5 arena lock held: grows the array with the CRT heap, never with fm5. */
static int FM5_CALL walk_collect(const FastMM_WalkBlockInfo *info, void *user)
{
    tu_walk *w = (tu_walk *)user;
    if (w->count == w->capacity) {
        size_t capacity = w->capacity ? w->capacity * 2 : 4096;
        FastMM_WalkBlockInfo *items = (FastMM_WalkBlockInfo *)realloc(w->items, capacity * sizeof *items);
        if (!items) {
            w->out_of_memory = 1;
            return 1;
        }
        w->items = items;
        w->capacity = capacity;
    }
    w->items[w->count++] = *info;
    return 0;
}

static int walk_compare(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const FastMM_WalkBlockInfo *)a)->Address;
    uintptr_t y = (uintptr_t)((const FastMM_WalkBlockInfo *)b)->Address;
    return x < y ? -1 : x > y;
}

void tu_walk_take(tu_walk *w, unsigned kinds, int used_only)
{
    memset(w, 0, sizeof *w);
    w->result = FastMM_WalkBlocks(walk_collect, w, kinds, used_only, 10000);
    if (w->count > 1)
        qsort(w->items, w->count, sizeof *w->items, walk_compare);
}

void tu_walk_free(tu_walk *w)
{
    free(w->items);
    memset(w, 0, sizeof *w);
}

const FastMM_WalkBlockInfo *tu_walk_find(const tu_walk *w, const void *address)
{
    size_t lo = 0, hi = w->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uintptr_t a = (uintptr_t)w->items[mid].Address;
        if (a == (uintptr_t)address)
            return &w->items[mid];
        if (a < (uintptr_t)address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

size_t tu_used_block_count(void)
{
    tu_walk w;
    tu_walk_take(&w, TU_BLOCK_KINDS, 1);
    size_t n = w.count;
    tu_walk_free(&w);
    return n;
}

size_t tu_allocated_bytes(void)
{
    FastMM_UsageSummary s;
    memset(&s, 0, sizeof s);
    FastMM_GetUsageSummary(&s);
    return s.AllocatedBytes;
}

static int pointer_compare(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

size_t tu_count_duplicates(void **p, size_t n)
{
    size_t dup = 0;
    qsort(p, n, sizeof *p, pointer_compare);
    for (size_t i = 1; i < n; i++)
        if (p[i] && p[i] == p[i - 1])
            dup++;
    return dup;
}

/* ---- Three adjacent medium blocks -------------------------------------------------------------- */

int tu_medium_chain_make(tu_medium_chain *c, size_t size)
{
    memset(c, 0, sizeof *c);
    for (size_t round = 0; round < TU_CHAIN_POOL; round++) {
        void *p = FastMM_GetMem(size);
        if (!p)
            return 0;
        c->pool[c->pool_count++] = p;
        if (c->pool_count < 3)
            continue;
        tu_walk w;
        tu_walk_take(&w, FastMM_MediumBlock, 0);
        int found = 0;
        for (size_t i = 0; i < c->pool_count && !found; i++) {
            const FastMM_WalkBlockInfo *a = tu_walk_find(&w, c->pool[i]);
            if (!a)
                continue;
            const uint8_t *next = (const uint8_t *)a->Address + a->BlockSize;
            for (size_t j = 0; j < c->pool_count && !found; j++) {
                if (c->pool[j] != next)
                    continue;
                const FastMM_WalkBlockInfo *b = tu_walk_find(&w, c->pool[j]);
                if (!b)
                    continue;
                const uint8_t *after = (const uint8_t *)b->Address + b->BlockSize;
                for (size_t k = 0; k < c->pool_count; k++) {
                    if (c->pool[k] == after) {
                        c->first = c->pool[i];
                        c->middle = c->pool[j];
                        c->last = c->pool[k];
                        c->first_block_size = a->BlockSize;
                        c->middle_block_size = b->BlockSize;
                        found = 1;
                        break;
                    }
                }
            }
        }
        tu_walk_free(&w);
        if (found)
            return 1;
    }
    return 0;
}

void tu_medium_chain_release(tu_medium_chain *c)
{
    for (size_t i = 0; i < c->pool_count; i++)
        if (c->pool[i])
            FastMM_FreeMem(c->pool[i]);
    c->pool_count = 0;
}

void tu_medium_chain_forget(tu_medium_chain *c, void *p)
{
    for (size_t i = 0; i < c->pool_count; i++)
        if (c->pool[i] == p)
            c->pool[i] = NULL;
}

/* ---- Holding an arena lock from a helper thread ------------------------------------------------ */

static int FM5_CALL lock_holder_callback(const FastMM_WalkBlockInfo *info, void *user)
{
    tu_lock_holder *h = (tu_lock_holder *)user;
    if (info->Address != h->target)
        return 0;
    tu_atomic_exchange(&h->reached, 1);
    tu_signal_raise(&h->on_target);
    /* Bounded, so that a test whose main thread got stuck cannot keep the lock forever. */
    tu_signal_wait(&h->release, 30000);
    return 1;
}

static void lock_holder_thread(void *arg)
{
    tu_lock_holder *h = (tu_lock_holder *)arg;
    long r = FastMM_WalkBlocks(lock_holder_callback, h, h->kinds, 0, 10000);
    tu_atomic_exchange(&h->walk_result, r);
    /* If the walk never reached the target, wake the main thread anyway so that it does not wait for
     * the whole timeout; it tells the two cases apart by `reached`. */
    tu_signal_raise(&h->on_target);
}

int tu_lock_holder_start(tu_lock_holder *h, const void *target, unsigned kinds)
{
    memset(h, 0, sizeof *h);
    h->target = target;
    h->kinds = kinds;
    h->thread = tu_thread_start(lock_holder_thread, h, 0);
    if (!h->thread)
        return 0;
    tu_signal_wait(&h->on_target, 20000);
    return h->reached != 0;
}

int tu_lock_holder_stop(tu_lock_holder *h)
{
    int ok = 1;
    tu_signal_raise(&h->release);
    if (h->thread)
        ok = tu_thread_join(h->thread, 30000);
    h->thread = NULL;
    return ok;
}
