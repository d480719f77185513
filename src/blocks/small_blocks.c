/* Small blocks: a lock-free sequential feed from the end of the current span, per-span free lists,
 * partially-free span lists, and pending-free lists so that a free never waits. */
#include "blocks/small_blocks.h"
#include "base/os.h"
#include "blocks/small_block_classes.h"
#include "blocks/medium_blocks.h"
#include "blocks/arena.h"
#include "blocks/arena_affinity.h"
#include "blocks/recycling.h"
#include "blocks/walk.h"

fm5_small_manager fm5_small_managers[FM5_MAXIMUM_ARENA_COUNT][FM5_SMALL_CLASS_COUNT];
size_t fm5_small_contention_count;
uint32_t fm5_small_arena_count;

/* A span's medium block loses its own header and the span header, and gains the first block's status
 * word, which lives in the span header. */
#define SPAN_OVERHEAD (FM5_MEDIUM_HEADER_SIZE + FM5_SMALL_SPAN_HEADER_SIZE - FM5_SMALL_HEADER_SIZE)

FM5_INLINE fm5_small_span *span_of_ring(fm5_ring *node)
{
    return FM5_CONTAINER_OF(node, fm5_small_span, partially_free);
}

/* Without the lock (the first pass): a hint. */
FM5_INLINE int may_have_free_block(const fm5_small_manager *manager)
{
    return fm5_atomic_load_ptr((void *volatile *)&manager->gate.pending_free_list) != NULL ||
           !fm5_ring_is_empty_hint(&manager->partially_free);
}

FM5_INLINE char *block_at(fm5_small_span *span, uint32_t offset)
{
    return (char *)span + offset;
}

FM5_INLINE uint16_t status_for(const fm5_small_span *span, const char *user)
{
    uintptr_t line_mask = ((uintptr_t)1 << FM5_SMALL_LINE_SHIFT) - 1;
    uintptr_t line = ((uintptr_t)user & ~line_mask) - (uintptr_t)span;
    return (uint16_t)(((line >> FM5_SMALL_LINE_SHIFT) << FM5_SMALL_OFFSET_SHIFT) | FM5_STATUS_SMALL);
}

/* Changed under the manager's lock only, but the thread caches' free path reads it without the lock,
 * as a hint (blocks/thread_cache.h): whole stores. Returns the new count. */
FM5_INLINE uint32_t add_in_use(fm5_small_span *span, int32_t change)
{
    uint32_t count = span->blocks_in_use + (uint32_t)change;
    __atomic_store_n(&span->blocks_in_use, count, __ATOMIC_RELAXED);
    return count;
}

/* ---- sequential feed -------------------------------------------------------------------------- */

/* Claims up to `want` blocks below the feed offset with one compare-and-swap: returns how many (0 when
 * the feed is used up), the span and the offset the claim went down from. */
static uint32_t claim_from_feed(fm5_small_manager *manager, uint32_t want, fm5_small_span **span_out, uint32_t *top)
{
    for (;;) {
        uint64_t current = fm5_load_u64(&manager->feed);
        uint32_t offset = (uint32_t)current;
        if (offset <= FM5_SMALL_SPAN_HEADER_SIZE)
            return 0;
        /* May be stale or NULL (the span was retired meanwhile): the compare-and-swap below then fails,
         * because every change of the feed span moves the counter's generation. */
        fm5_small_span *span = __atomic_load_n(&manager->feed_span, __ATOMIC_ACQUIRE);
        uint32_t block_size = manager->block_size;
        uint32_t available = (offset - FM5_SMALL_SPAN_HEADER_SIZE) / block_size;
        uint32_t count = want < available ? want : available;
        uint32_t next_offset = offset - count * block_size;
        uint64_t next = (((current >> 32) + 1) << 32) | next_offset;
        if (fm5_cas_u64(&manager->feed, current, next)) {
            FM5_ASSERT(span && span->manager == manager && next_offset >= FM5_SMALL_SPAN_HEADER_SIZE);
            *span_out = span;
            *top = offset;
            return count;
        }
    }
}

static void *feed(fm5_small_manager *manager)
{
    fm5_small_span *span;
    uint32_t top;
    if (!claim_from_feed(manager, 1, &span, &top))
        return NULL;
    char *user = block_at(span, top - manager->block_size);
    FM5_ASSERT(fm5_status_load(user) == (status_for(span, user) | FM5_STATUS_FREE));
    /* A walk under the lock may be reading it: one whole load and store (the asm clears the same
     * bit). */
    fm5_status_store(user, fm5_status_load(user) & ~FM5_STATUS_FREE);
    return user;
}

static void start_feed(fm5_small_manager *manager, fm5_small_span *span, uint32_t last_offset)
{
    /* The span is published before the offset that makes it usable. A feeder that read the old offset
     * found it exhausted and gave up, or fails its compare-and-swap because the counter moved. */
    FM5_ASSERT(manager->gate.locked && (uint32_t)fm5_load_u64(&manager->feed) <= FM5_SMALL_SPAN_HEADER_SIZE);
    __atomic_store_n(&manager->feed_span, span, __ATOMIC_RELEASE);
    for (;;) {
        uint64_t current = fm5_load_u64(&manager->feed);
        uint64_t next = (((current >> 32) + 1) << 32) | last_offset;
        if (fm5_cas_u64(&manager->feed, current, next))
            return;
    }
}

/* ---- allocation and release under the manager's lock ------------------------------------------ */

/* A span with no block in use goes back to the medium manager (chain 1 of the lock order: that free
 * never waits, docs/design.md). */
static void release_span(fm5_small_manager *manager, fm5_small_span *span)
{
    FM5_ASSERT(manager->gate.locked && span->blocks_in_use == 0);
    if (span->first_free_block)
        fm5_ring_remove(&span->partially_free);
    if (manager->feed_span == span)
        __atomic_store_n(&manager->feed_span, NULL, __ATOMIC_RELAXED);
    span->identity_tag = 0;
    /* A walk of the medium arena may be reading the flag (medium_blocks.c's walk_span). */
    __atomic_store_n(&fm5_medium_header_of(span)->is_small_block_span, 0, __ATOMIC_RELAXED);
    fm5_medium_free(span);
}

static void free_locked(fm5_small_manager *manager, fm5_small_span *span, char *user)
{
    FM5_ASSERT(manager->gate.locked && span->manager == manager && span->blocks_in_use > 0);
    FM5_ASSERT(fm5_small_is_block_start(span, user));
    if (add_in_use(span, -1) == 0 && !fm5_recycling_keeps_empty_small_spans()) {
        release_span(manager, span);
        return;
    }
    /* Claimed already (fm5_small_free, a cache, a queued block) or being requeued: one whole store. */
    fm5_status_store(user, fm5_status_load(user) | FM5_STATUS_FREE);
    *(void **)user = span->first_free_block;
    if (!span->first_free_block)
        fm5_ring_insert_first(&manager->partially_free, &span->partially_free);
    span->first_free_block = user;
}

/* The arena skeleton's release step, for a block freed under the lock and for a queued one (whose
 * status word fm5_small_free or a thread cache has marked free already). */
static void release_block(void *manager, void *block)
{
    free_locked(manager, fm5_small_span_of(block, fm5_status_load(block)), block);
}

static void release_chain(fm5_small_manager *manager, char *block)
{
    while (block) {
        char *next = *(char **)block;
        release_block(manager, block);
        block = next;
    }
}

static void *reuse_locked(fm5_small_manager *manager)
{
    char *pending = fm5_pending_take_all(&manager->gate.pending_free_list);
    if (pending) {
        /* The first queued block is handed out at once unless it must be checked first; it is still
         * counted in use, since it never reached its span's free chain. */
        char *rest = *(char **)pending;
        if (!(fm5_status_load(pending) & FM5_STATUS_HAS_DEBUG_INFO)) {
            release_chain(manager, rest);
            fm5_status_store(pending, fm5_status_load(pending) & ~FM5_STATUS_FREE);
            return pending;
        }
        release_chain(manager, pending);
    }
    for (;;) {
        if (fm5_ring_is_empty(&manager->partially_free))
            return NULL;
        fm5_small_span *span = span_of_ring(manager->partially_free.next);
        char *user = span->first_free_block;
        FM5_ASSERT(span->manager == manager && span->blocks_in_use < span->total_blocks);
        FM5_ASSERT(user && fm5_small_is_block_start(span, user) && (*fm5_status_word(user) & FM5_STATUS_FREE));
        span->first_free_block = *(void **)user;
        add_in_use(span, 1);
        if (!span->first_free_block)
            fm5_ring_remove(&span->partially_free);
        /* Whole loads and stores: a thread cache's fill may be reading the word (its line test). */
        if (!(fm5_status_load(user) & FM5_STATUS_HAS_DEBUG_INFO) ||
            fm5_recycling_may_reuse(user, (size_t)manager->block_size - FM5_SMALL_HEADER_SIZE, 1)) {
            fm5_status_store(user, fm5_status_load(user) & ~(FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO));
            return user;
        }
        /* A corrupted freed debug block is quarantined: counted in use, on no free chain, still marked
         * free and a debug block, so that scans keep checking it (blocks/recycling.h). */
        fm5_recycling_quarantine(user);
    }
}

/* The medium block size of a span of `blocks` blocks of `block_size` bytes: its header, whose last two
 * bytes are the first block's status word, then the blocks. */
static uint32_t span_size_for(uint32_t blocks, uint32_t block_size)
{
    return (uint32_t)fm5_medium_block_size_for((size_t)blocks * block_size + FM5_SMALL_SPAN_HEADER_SIZE -
                                               FM5_SMALL_HEADER_SIZE);
}

/* Spans grow: a manager's first span (its feed word's change counter is still 0: nothing was ever fed)
 * has the minimum size, and each next one twice the blocks of the feed span it used up, up to the
 * optimal size. Why: new_span_locked writes every block's status word, so a class that a program uses
 * for a few blocks would fault in the pages of a whole optimal span for nothing. A manager whose
 * feed span emptied and was released has been busy before: it goes on with the optimal size, since
 * starting again from the minimum would make a class whose blocks come and go in bursts cut three
 * spans where one serves. */
static uint32_t next_span_size(fm5_small_manager *manager)
{
    if (!(fm5_load_u64(&manager->feed) >> 32))
        return manager->minimum_span_size;
    const fm5_small_span *used_up = manager->feed_span;
    if (!used_up)
        return manager->optimal_span_size;
    uint32_t doubled = span_size_for(2 * used_up->total_blocks, manager->block_size);
    return doubled < manager->optimal_span_size ? doubled : manager->optimal_span_size;
}

static void *new_span_locked(fm5_small_manager *manager)
{
    uint32_t size = next_span_size(manager);
    fm5_small_span *span = fm5_medium_allocate(size);
    if (!span && size != manager->minimum_span_size)
        span = fm5_medium_allocate(manager->minimum_span_size);
    if (!span)
        return NULL;
    uint32_t block_size = manager->block_size;
    uint32_t count = (uint32_t)((fm5_medium_block_size(span) - SPAN_OVERHEAD) / block_size);
    span->manager = manager;
    span->total_blocks = count;
    __atomic_store_n(&span->blocks_in_use, count, __ATOMIC_RELAXED);
    span->first_free_block = NULL;
    span->partially_free.next = span->partially_free.prev = NULL;
    /* The copies that FreeMem trusts once the tag matches: written before the tag. */
    span->block_size = manager->block_size;
    span->class_slot = (uint16_t)manager->gate.row_index;
    span->block_size_reciprocal = manager->block_size_reciprocal;
    span->blocks_bytes = count * block_size;
    span->identity_tag = fm5_small_span_tag(span);
    /* Every status word is written now, marked free until fed: a walk or a stray free then never meets
     * a status word that is still being written, and a pointer to an unfed block is refused. */
    for (uint32_t i = 0; i < count; i++) {
        char *user = block_at(span, FM5_SMALL_SPAN_HEADER_SIZE + i * block_size);
        *fm5_status_word(user) = status_for(span, user) | FM5_STATUS_FREE;
    }
    uint32_t last_offset = FM5_SMALL_SPAN_HEADER_SIZE + (count - 1) * block_size;
    char *last = block_at(span, last_offset);
    *fm5_status_word(last) &= (uint16_t)~FM5_STATUS_FREE;
    __atomic_store_n(&fm5_medium_header_of(span)->is_small_block_span, 1, __ATOMIC_RELEASE);
    start_feed(manager, span, last_offset);
    return last;
}

/* ---- public paths ----------------------------------------------------------------------------- */

/* First pass: reuse a freed block in an idle arena that has one, else feed lock-free. */
static void *first_pass(void *arena, void *context, int *final)
{
    (void)context;
    (void)final;
    fm5_small_manager *manager = arena;
    if (!fm5_lock_is_held(&manager->gate.locked) && may_have_free_block(manager) &&
        fm5_try_lock(&manager->gate.locked)) {
        void *user = reuse_locked(manager);
        fm5_unlock(&manager->gate.locked);
        if (user)
            return user;
    }
    return feed(manager);
}

/* Second pass: lock the arena and, if nothing else works, give it a new span. */
static void *second_pass(void *arena, void *context, int *final)
{
    (void)context;
    fm5_small_manager *manager = arena;
    if (!fm5_try_lock(&manager->gate.locked))
        return NULL;
    void *user = reuse_locked(manager);
    if (!user)
        user = feed(manager);
    if (!user) {
        user = new_span_locked(manager);
        *final = 1;
    }
    fm5_unlock(&manager->gate.locked);
    return user;
}

/* Every arena of the class was busy: with affinity enabled the thread gets an arena of its own for the
 * class (blocks/arena_affinity.h), where the next first pass starts. */
static unsigned after_contention(void *context)
{
    return fm5_affinity_after_contention(*(const unsigned *)context);
}

void *fm5_small_get_mem(size_t size)
{
    unsigned slot = fm5_small_lookup[(size + 1) >> FM5_SMALL_GRANULARITY_SHIFT];
    fm5_small_manager *first = &fm5_small_managers[0][slot];
    unsigned start = FM5_UNLIKELY(__atomic_load_n(&first->affinity_active, __ATOMIC_RELAXED))
                         ? fm5_affinity_first_arena(slot) : 0;
    return fm5_arena_allocate(first, sizeof fm5_small_managers[0], fm5_small_arena_count, start, first_pass,
                              second_pass, after_contention, &slot, &fm5_small_contention_count);
}

/* ---- batches for the thread caches ------------------------------------------------------------ */

/* A fill of up to `want` blocks of one class: the first is handed out, the rest are chained on `rest`
 * marked free (cached blocks, blocks/thread_cache.h), all counted in use by their spans. */
typedef struct batch_request {
    unsigned slot;
    unsigned want;
    int fresh_only;    /* the feed and new spans only */
    char *rest;
    unsigned rest_count;
} batch_request;

FM5_INLINE void cache_block(batch_request *request, char *user)
{
    fm5_status_store(user, fm5_status_load(user) | FM5_STATUS_FREE);
    *(char **)user = request->rest;
    request->rest = user;
    request->rest_count++;
}

/* Under the lock: the first block as reuse_locked finds it (which drains the pending frees and checks a
 * freed debug block), then whole runs of the partially-free spans' chains up to the request. A chain
 * is linked as a cache is and its blocks are marked free already, so a run moves over as it is; a
 * freed debug block ends the run, since it must be checked before it is used. */
static void *reuse_batch_locked(fm5_small_manager *manager, batch_request *request)
{
    char *first = reuse_locked(manager);
    if (!first)
        return NULL;
    unsigned still = request->want - 1;
    while (still && !fm5_ring_is_empty(&manager->partially_free)) {
        fm5_small_span *span = span_of_ring(manager->partially_free.next);
        char *run = span->first_free_block, *last = NULL, *user = run;
        unsigned taken = 0;
        while (user && taken < still && !(fm5_status_load(user) & FM5_STATUS_HAS_DEBUG_INFO)) {
            FM5_ASSERT(fm5_small_is_block_start(span, user) && (fm5_status_load(user) & FM5_STATUS_FREE));
            last = user;
            user = *(char **)user;
            taken++;
        }
        if (!taken)
            break;
        span->first_free_block = user;
        add_in_use(span, (int32_t)taken);
        if (!user)
            fm5_ring_remove(&span->partially_free);
        *(char **)last = request->rest;
        request->rest = run;
        request->rest_count += taken;
        still -= taken;
    }
    return first;
}

/* Lock-free: up to the request from the feed (claim_from_feed), handed out from the top down as feed()
 * would. */
static void *feed_batch(fm5_small_manager *manager, batch_request *request, unsigned want)
{
    fm5_small_span *span;
    uint32_t top;
    uint32_t count = claim_from_feed(manager, want, &span, &top);
    if (!count)
        return NULL;
    uint32_t block_size = manager->block_size;
    /* Fed blocks are marked free already: the cached ones keep the mark. */
    for (uint32_t i = count; i >= 2; i--) {
        char *user = block_at(span, top - i * block_size);
        *(char **)user = request->rest;
        request->rest = user;
    }
    request->rest_count += count - 1;
    char *user = block_at(span, top - block_size);
    fm5_status_store(user, fm5_status_load(user) & ~FM5_STATUS_FREE);
    return user;
}

static void *batch_first_pass(void *arena, void *context, int *final)
{
    (void)final;
    fm5_small_manager *manager = arena;
    batch_request *request = context;
    if (!request->fresh_only && !fm5_lock_is_held(&manager->gate.locked) && may_have_free_block(manager) &&
        fm5_try_lock(&manager->gate.locked)) {
        void *user = reuse_batch_locked(manager, request);
        fm5_unlock(&manager->gate.locked);
        if (user)
            return user;
    }
    return feed_batch(manager, request, request->want);
}

static void *batch_second_pass(void *arena, void *context, int *final)
{
    fm5_small_manager *manager = arena;
    batch_request *request = context;
    if (!fm5_try_lock(&manager->gate.locked))
        return NULL;
    void *user = request->fresh_only ? NULL : reuse_batch_locked(manager, request);
    if (!user)
        user = feed_batch(manager, request, request->want);
    if (!user) {
        user = new_span_locked(manager);
        char *more = user && request->want > 1 ? feed_batch(manager, request, request->want - 1) : NULL;
        if (more)
            cache_block(request, more);
        *final = 1;
    }
    fm5_unlock(&manager->gate.locked);
    return user;
}

static unsigned batch_after_contention(void *context)
{
    return fm5_affinity_after_contention(((const batch_request *)context)->slot);
}

void *fm5_small_get_batch(unsigned class_slot, unsigned want, void **rest, unsigned *rest_count, int fresh_only)
{
    fm5_small_manager *first = &fm5_small_managers[0][class_slot];
    unsigned start = FM5_UNLIKELY(__atomic_load_n(&first->affinity_active, __ATOMIC_RELAXED))
                         ? fm5_affinity_first_arena(class_slot) : 0;
    batch_request request = { class_slot, want ? want : 1, fresh_only, NULL, 0 };
    void *user = fm5_arena_allocate(first, sizeof fm5_small_managers[0], fm5_small_arena_count, start,
                                    batch_first_pass, batch_second_pass, batch_after_contention, &request,
                                    &fm5_small_contention_count);
    *rest = request.rest;
    *rest_count = request.rest_count;
    return user;
}

int fm5_small_lines_are_quiet(const void *user)
{
    fm5_small_span *span = fm5_small_span_of(user, fm5_status_load(user));
    uint32_t block_size = span->block_size;
    /* Blocks as their owners write them: from the status word to the next block's. */
    uintptr_t blocks = (uintptr_t)span + FM5_SMALL_SPAN_HEADER_SIZE - FM5_SMALL_HEADER_SIZE;
    uintptr_t start = (uintptr_t)user - FM5_SMALL_HEADER_SIZE;
    uintptr_t line_mask = FM5_CACHE_LINE - 1;
    uintptr_t first_line = start & ~line_mask, last_byte = (start + block_size - 1) | line_mask;
    uint32_t own = (uint32_t)((start - blocks) / block_size);
    uint32_t first = first_line > blocks ? (uint32_t)((first_line - blocks) / block_size) : 0;
    uint32_t last = (uint32_t)((last_byte - blocks) / block_size);
    if (last >= span->total_blocks)
        last = span->total_blocks - 1;
    for (uint32_t i = first; i <= last; i++)
        if (i != own && !(fm5_status_load((const char *)blocks + (uintptr_t)i * block_size + FM5_SMALL_HEADER_SIZE) &
                          FM5_STATUS_FREE))
            return 0;
    return 1;
}

void fm5_small_release_cached(void *chain)
{
    (void)fm5_small_release_cached_first(chain, ~0u);
}

void *fm5_small_release_cached_first(void *chain, unsigned count)
{
    fm5_small_manager *held = NULL;
    char *user = chain;
    for (; user && count; count--) {
        char *next = *(char **)user;
        FM5_ASSERT((fm5_status_load(user) & (FM5_STATUS_SMALL | FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO)) ==
                   (FM5_STATUS_SMALL | FM5_STATUS_FREE));
        fm5_small_manager *manager = fm5_small_span_of(user, fm5_status_load(user))->manager;
        if (manager != held) {
            if (held)
                fm5_arena_unlock(&held->gate, release_block, held);
            held = fm5_try_lock(&manager->gate.locked) ? manager : NULL;
        }
        /* A busy manager gets it queued, marked free as queued blocks are: a flush never waits. */
        if (held)
            release_block(held, user);
        else
            fm5_pending_push(&manager->gate.pending_free_list, user);
        user = next;
    }
    if (held)
        fm5_arena_unlock(&held->gate, release_block, held);
    return user;
}

/* The skeleton's free that never waits, with the claim made first in both branches: a thread cache's
 * free (blocks/thread_cache.h) takes no manager lock, so the lock alone no longer decides which of two
 * frees of one block wins; the compare-and-swap of the free mark does. Nothing of the span is read
 * before the claim: the free that won a race of two may have emptied the span and released it, and
 * its header with it. A claimed block is in use, so its span stays until the block is released. */
int fm5_small_free(void *user, fm5_small_span *span)
{
    if (!fm5_small_claim(user, (uint16_t)fm5_status_load(user)))
        return -1;
    fm5_small_release_claimed(user, span);
    return 0;
}

void fm5_small_release_claimed(void *user, fm5_small_span *span)
{
    fm5_small_manager *manager = span->manager;
    FM5_ASSERT(span->block_size == manager->block_size && span->class_slot == manager->gate.row_index &&
               span->block_size_reciprocal == manager->block_size_reciprocal &&
               span->blocks_bytes == span->total_blocks * span->block_size);
    FM5_ASSERT(fm5_status_load(user) & FM5_STATUS_FREE);
    if (fm5_try_lock(&manager->gate.locked)) {
        release_block(manager, user);
        fm5_arena_unlock(&manager->gate, release_block, manager);
    } else {
        fm5_pending_push(&manager->gate.pending_free_list, user);
    }
}

int fm5_small_drain_pending_and_unlock(fm5_small_manager *manager)
{
    fm5_arena_unlock(&manager->gate, release_block, manager);
    return 0;
}

int fm5_small_requeue_quarantined(void *user)
{
    fm5_small_span *span = fm5_small_span_of(user, fm5_status_load(user));
    fm5_small_manager *manager = span->manager;
    fm5_lock_with_timeout(&manager->gate.locked, FM5_WAIT_FOREVER);
    FM5_ASSERT((*fm5_status_word(user) & (FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO)) ==
               (FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO));
    int intact = fm5_recycling_may_reuse(user, (size_t)manager->block_size - FM5_SMALL_HEADER_SIZE, 0);
    if (intact)
        free_locked(manager, span, user);
    fm5_arena_unlock(&manager->gate, release_block, manager);
    return intact;
}

/* A span whose blocks are all free, kept by debug mode: its freed debug blocks pass the check made
 * before a reuse, since releasing the span discards them; a corrupted one is reported and quarantined
 * as reuse_locked does (off the chain, counted in use), and keeps the span. The others go with it. */
static void release_empty_span(fm5_small_manager *manager, fm5_small_span *span)
{
    FM5_ASSERT(manager->gate.locked && span->manager == manager && span->blocks_in_use == 0);
    void **link = &span->first_free_block;
    while (*link) {
        char *user = *link;
        if ((*fm5_status_word(user) & FM5_STATUS_HAS_DEBUG_INFO) &&
            !fm5_recycling_may_reuse(user, (size_t)manager->block_size - FM5_SMALL_HEADER_SIZE, 1)) {
            *link = *(void **)user;
            add_in_use(span, 1);
            fm5_recycling_quarantine(user);
            continue;
        }
        link = (void **)user;
    }
    if (span->blocks_in_use == 0)
        release_span(manager, span);
    else if (!span->first_free_block)
        fm5_ring_remove(&span->partially_free);
}

int fm5_small_release_empty_spans(uint32_t timeout_ms)
{
    int complete = 1;
    for (unsigned a = 0; a < fm5_small_arena_count; a++) {
        for (unsigned c = 0; c < FM5_SMALL_CLASS_COUNT; c++) {
            fm5_small_manager *manager = &fm5_small_managers[a][c];
            if (!fm5_lock_with_timeout(&manager->gate.locked, timeout_ms)) {
                complete = 0;
                continue;
            }
            /* Checked under the lock: a debug mode that came back keeps its empty spans again. */
            if (fm5_recycling_keeps_empty_small_spans()) {
                fm5_small_drain_pending_and_unlock(manager);
                return 0;
            }
            /* A span with no block in use has every block on its chain, so it is on the ring. */
            fm5_ring *node = manager->partially_free.next;
            while (node != &manager->partially_free) {
                fm5_ring *next = node->next;
                if (span_of_ring(node)->blocks_in_use == 0)
                    release_empty_span(manager, span_of_ring(node));
                node = next;
            }
            fm5_small_drain_pending_and_unlock(manager);
        }
    }
    return complete;
}

int fm5_small_process_pending_frees(int wait)
{
    int complete = 1;
    for (unsigned a = 0; a < fm5_small_arena_count; a++)
        for (unsigned c = 0; c < FM5_SMALL_CLASS_COUNT; c++)
            complete &= fm5_arena_process_pending(&fm5_small_managers[a][c].gate, wait, release_block,
                                                  &fm5_small_managers[a][c]);
    return complete;
}

/* ---- walking ---------------------------------------------------------------------------------- */

int fm5_small_walk_span(void *span_address, fm5_walk_visitor visitor, void *context, uint32_t timeout_ms)
{
    fm5_small_span *span = span_address;
    fm5_small_manager *manager = span->manager;
    if (!fm5_lock_with_timeout(&manager->gate.locked, timeout_ms))
        return FM5_WALK_INCOMPLETE;
    /* The caller saw a span, but its manager may have freed the span's last block while this walk
     * waited for the lock (free_locked clears the tag and the medium flag, then hands the block to the
     * medium manager, whose lock the caller holds, so the block stays where it is, queued). */
    if (span->identity_tag != fm5_small_span_tag(span) ||
        !__atomic_load_n(&fm5_medium_header_of(span)->is_small_block_span, __ATOMIC_RELAXED)) {
        fm5_unlock(&manager->gate.locked);
        return FM5_WALK_NOT_A_SPAN;
    }
    int result = FM5_WALK_COMPLETE;
    size_t span_size = fm5_medium_block_size(span);
    fm5_small_check_span(span);
    fm5_walk_item item = { span, span_size, 0, FastMM_SmallBlockSpan, manager->arena, 0, 0 };
    if (visitor(&item, context)) {
        result = FM5_WALK_STOPPED;
    } else {
        uint32_t unfed_below = manager->feed_span == span ? (uint32_t)fm5_load_u64(&manager->feed)
                                                          : FM5_SMALL_SPAN_HEADER_SIZE;
        for (uint32_t i = 0; i < span->total_blocks; i++) {
            uint32_t offset = FM5_SMALL_SPAN_HEADER_SIZE + i * manager->block_size;
            char *user = block_at(span, offset);
            int unused = offset < unfed_below;
            /* A live block's owner may be changing its flags: one whole read. */
            fm5_walk_item block = { user, manager->block_size, manager->block_size - FM5_SMALL_HEADER_SIZE,
                                    FastMM_SmallBlock, manager->arena,
                                    unused || (fm5_status_load(user) & FM5_STATUS_FREE) != 0, unused };
            if (visitor(&block, context)) {
                result = FM5_WALK_STOPPED;
                break;
            }
        }
    }
    fm5_unlock(&manager->gate.locked);
    return result;
}

/* ---- invariants ------------------------------------------------------------------------------- */

void fm5_small_check_span(const fm5_small_span *span)
{
#if FM5_CHECKED
    const fm5_small_manager *manager = span->manager;
    FM5_ASSERT(fm5_is_small_manager(manager) && manager->gate.locked);
    FM5_ASSERT(span->identity_tag == fm5_small_span_tag(span));
    FM5_ASSERT(span->blocks_in_use <= span->total_blocks && span->total_blocks > 0);
    uint32_t chained = 0;
    for (const char *user = span->first_free_block; user; user = *(char *const *)user) {
        FM5_ASSERT(fm5_small_is_block_start(span, user));
        FM5_ASSERT((*fm5_status_word(user) & (uint16_t)~FM5_STATUS_HAS_DEBUG_INFO) ==
                   (status_for(span, user) | FM5_STATUS_FREE));
        FM5_ASSERT(++chained <= span->total_blocks);
    }
    FM5_ASSERT(chained == span->total_blocks - span->blocks_in_use);
    if (chained)
        FM5_ASSERT(span->partially_free.next->prev == &span->partially_free &&
                   span->partially_free.prev->next == &span->partially_free);
    for (uint32_t i = 0; i < span->total_blocks; i++) {
        const char *user = (const char *)span + FM5_SMALL_SPAN_HEADER_SIZE + (size_t)i * manager->block_size;
        FM5_ASSERT((*fm5_status_word(user) & (uint16_t)~(FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO)) ==
                   status_for(span, user));
    }
#else
    (void)span;
#endif
}

/* ---- set-up ----------------------------------------------------------------------------------- */

/* An arena's managers are prepared when the arena count first reaches them. */
static unsigned prepared_arenas;

static void prepare_arena(unsigned a)
{
    for (unsigned c = 0; c < FM5_SMALL_CLASS_COUNT; c++) {
        uint32_t block_size = fm5_small_block_sizes[c];
        uint32_t optimal = block_size * FM5_SMALL_OPTIMAL_BLOCKS_PER_SPAN;
        if (optimal < FM5_SMALL_MINIMUM_OPTIMAL_SPAN_SIZE)
            optimal = FM5_SMALL_MINIMUM_OPTIMAL_SPAN_SIZE;
        if (optimal > FM5_SMALL_MAXIMUM_OPTIMAL_SPAN_SIZE)
            optimal = FM5_SMALL_MAXIMUM_OPTIMAL_SPAN_SIZE;
        uint32_t blocks = optimal / block_size;
        fm5_small_manager *manager = &fm5_small_managers[a][fm5_small_class_slot(c)];
        fm5_ring_init(&manager->partially_free);
        manager->gate.row_index = fm5_small_class_slot(c);
        manager->block_size = (uint16_t)block_size;
        manager->arena = (uint8_t)a;
        manager->block_size_reciprocal = (uint32_t)((((uint64_t)1 << 32) + block_size - 1) / block_size);
        manager->minimum_span_size = span_size_for(FM5_SMALL_MINIMUM_BLOCKS_PER_SPAN, block_size);
        manager->optimal_span_size = span_size_for(blocks, block_size);
        manager->feed = FM5_SMALL_SPAN_HEADER_SIZE;
    }
}

void fm5_small_set_arena_count(unsigned count)
{
    FM5_ASSERT(count >= 1 && count <= FM5_MAXIMUM_ARENA_COUNT);
    while (prepared_arenas < count)
        prepare_arena(prepared_arenas++);
    fm5_small_arena_count = count;
}

void fm5_small_initialize(void)
{
    fm5_small_set_arena_count(FM5_DEFAULT_SMALL_ARENA_COUNT);
}
