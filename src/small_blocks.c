/* Small blocks: a lock-free sequential feed from the end of the current span, per-span free lists,
 * partially-free span lists, and pending-free lists so that a free never waits. */
#include "small_blocks.h"
#include "small_block_classes.h"
#include "medium_blocks.h"
#include "pending_free_list.h"
#include "debug_options.h"
#include "block_walk.h"
#include "debug_blocks.h"

fm5_small_manager fm5_small_managers[FM5_SMALL_ARENA_COUNT][FM5_SMALL_CLASS_COUNT];
size_t fm5_small_contention_count;

#define MINIMUM_BLOCKS_PER_SPAN 16u
#define OPTIMAL_BLOCKS_PER_SPAN 64u
#define MINIMUM_OPTIMAL_SPAN_SIZE 19264u
#define MAXIMUM_OPTIMAL_SPAN_SIZE 101184u
/* A span's medium block loses its own header and the span header, and gains the first block's status
 * word, which lives in the span header. */
#define SPAN_OVERHEAD (FM5_MEDIUM_HEADER_SIZE + FM5_SMALL_SPAN_HEADER_SIZE - FM5_SMALL_HEADER_SIZE)

FM5_INLINE fm5_small_span *partial_list_sentinel(fm5_small_manager *manager)
{
    return (fm5_small_span *)manager;
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

/* ---- the partially-free span list ------------------------------------------------------------- */

static void unlink_partial(fm5_small_span *span)
{
    span->prev_partially_free->next_partially_free = span->next_partially_free;
    span->next_partially_free->prev_partially_free = span->prev_partially_free;
}

static void link_partial_first(fm5_small_manager *manager, fm5_small_span *span)
{
    fm5_small_span *sentinel = partial_list_sentinel(manager);
    span->next_partially_free = sentinel->next_partially_free;
    span->prev_partially_free = sentinel;
    sentinel->next_partially_free->prev_partially_free = span;
    sentinel->next_partially_free = span;
}

/* ---- sequential feed -------------------------------------------------------------------------- */

static void *feed(fm5_small_manager *manager)
{
    for (;;) {
        uint64_t current = fm5_load_u64(&manager->feed);
        uint32_t offset = (uint32_t)current;
        if (offset <= FM5_SMALL_SPAN_HEADER_SIZE)
            return NULL;
        fm5_small_span *span = manager->feed_span;
        uint32_t next_offset = offset - manager->block_size;
        uint64_t next = (((current >> 32) + 1) << 32) | next_offset;
        if (fm5_cas_u64(&manager->feed, current, next)) {
            char *user = block_at(span, next_offset);
            *fm5_status_word(user) &= (uint16_t)~FM5_STATUS_FREE;
            return user;
        }
    }
}

static void start_feed(fm5_small_manager *manager, fm5_small_span *span, uint32_t last_offset)
{
    /* The span is published before the offset that makes it usable; a feeder that read an older offset
     * fails its compare-and-swap because the counter moved. */
    __atomic_store_n(&manager->feed_span, span, __ATOMIC_RELEASE);
    for (;;) {
        uint64_t current = fm5_load_u64(&manager->feed);
        uint64_t next = (((current >> 32) + 1) << 32) | last_offset;
        if (fm5_cas_u64(&manager->feed, current, next))
            return;
    }
}

/* ---- allocation and release under the manager's lock ------------------------------------------ */

static void free_locked(fm5_small_manager *manager, fm5_small_span *span, char *user)
{
    if (--span->blocks_in_use == 0 && !fm5_debug_never_free_small_block_spans()) {
        if (span->first_free_block)
            unlink_partial(span);
        if (manager->feed_span == span)
            manager->feed_span = NULL;
        span->identity_tag = 0;
        fm5_medium_header_of(span)->is_small_block_span = 0;
        fm5_medium_free(span);
        return;
    }
    *fm5_status_word(user) |= FM5_STATUS_FREE;
    *(void **)user = span->first_free_block;
    if (!span->first_free_block)
        link_partial_first(manager, span);
    span->first_free_block = user;
}

/* Releases queued blocks; their status words are already marked free. */
static void free_pending_chain(fm5_small_manager *manager, char *block)
{
    while (block) {
        char *next = *(char **)block;
        free_locked(manager, fm5_small_span_of(block, *fm5_status_word(block)), block);
        block = next;
    }
}

static void *reuse_locked(fm5_small_manager *manager)
{
    char *pending = fm5_pending_take_all(&manager->pending_free_list);
    if (pending) {
        /* The first queued block is handed out at once unless it must be checked first. */
        char *rest = *(char **)pending;
        if (!(*fm5_status_word(pending) & FM5_STATUS_HAS_DEBUG_INFO)) {
            free_pending_chain(manager, rest);
            *fm5_status_word(pending) &= (uint16_t)~FM5_STATUS_FREE;
            return pending;
        }
        free_pending_chain(manager, pending);
    }
    for (;;) {
        fm5_small_span *span = manager->first_partially_free;
        if (span == partial_list_sentinel(manager))
            return NULL;
        char *user = span->first_free_block;
        span->first_free_block = *(void **)user;
        span->blocks_in_use++;
        if (!span->first_free_block)
            unlink_partial(span);
        volatile uint16_t *status = fm5_status_word(user);
        if (!(*status & FM5_STATUS_HAS_DEBUG_INFO) ||
            fm5_debug_freed_block_reusable(user, (size_t)manager->block_size - FM5_SMALL_HEADER_SIZE)) {
            *status &= (uint16_t)~(FM5_STATUS_FREE | FM5_STATUS_HAS_DEBUG_INFO);
            return user;
        }
        /* A corrupted freed debug block stays out of circulation: counted in use, on no list, and no
         * longer marked as a debug block so that scans pass it by. */
        *status &= (uint16_t)~FM5_STATUS_HAS_DEBUG_INFO;
    }
}

static void *new_span_locked(fm5_small_manager *manager)
{
    fm5_small_span *span = fm5_medium_allocate(manager->optimal_span_size);
    if (!span)
        span = fm5_medium_allocate(manager->minimum_span_size);
    if (!span)
        return NULL;
    uint32_t block_size = manager->block_size;
    uint32_t count = (uint32_t)((fm5_medium_block_size(span) - SPAN_OVERHEAD) / block_size);
    span->manager = manager;
    span->total_blocks = count;
    span->blocks_in_use = count;
    span->first_free_block = NULL;
    span->next_partially_free = span->prev_partially_free = NULL;
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

static void drain_pending_locked(fm5_small_manager *manager)
{
    char *pending = fm5_pending_take_all(&manager->pending_free_list);
    if (pending)
        free_pending_chain(manager, pending);
}

/* ---- public paths ----------------------------------------------------------------------------- */

void *fm5_small_get_mem(size_t size)
{
    unsigned slot = fm5_small_lookup[(size + 1) >> FM5_SMALL_GRANULARITY_SHIFT];
    for (;;) {
        /* First pass: reuse freed blocks in an idle arena, else feed lock-free. */
        for (unsigned a = 0; a < FM5_SMALL_ARENA_COUNT; a++) {
            fm5_small_manager *manager = &fm5_small_managers[a][slot];
            if (!manager->locked &&
                (manager->pending_free_list || manager->first_partially_free != partial_list_sentinel(manager)) &&
                fm5_try_lock(&manager->locked)) {
                void *user = reuse_locked(manager);
                fm5_unlock(&manager->locked);
                if (user)
                    return user;
            }
            void *user = feed(manager);
            if (user)
                return user;
        }
        /* Second pass: lock an arena and, if nothing else works, give it a new span. */
        for (unsigned a = 0; a < FM5_SMALL_ARENA_COUNT; a++) {
            fm5_small_manager *manager = &fm5_small_managers[a][slot];
            if (!fm5_try_lock(&manager->locked))
                continue;
            void *user = reuse_locked(manager);
            if (!user)
                user = feed(manager);
            int out_of_memory = 0;
            if (!user) {
                user = new_span_locked(manager);
                out_of_memory = user == NULL;
            }
            fm5_unlock(&manager->locked);
            if (user || out_of_memory)
                return user;
        }
        fm5_small_contention_count++;
        SwitchToThread();
    }
}

int fm5_small_free(void *user, fm5_small_span *span)
{
    fm5_small_manager *manager = span->manager;
    volatile uint16_t *status = fm5_status_word(user);
    if (fm5_try_lock(&manager->locked)) {
        if (*status & FM5_STATUS_FREE) {
            fm5_unlock(&manager->locked);
            return -1;
        }
        free_locked(manager, span, user);
        return fm5_small_drain_pending_and_unlock(manager);
    }
    /* Busy owner: mark the block free first, so that a second free of it fails, then queue it. */
    uint16_t old = *status;
    if ((old & FM5_STATUS_FREE) || !fm5_cas_u16(status, old, (uint16_t)(old | FM5_STATUS_FREE)))
        return -1;
    fm5_pending_push(&manager->pending_free_list, user);
    return 0;
}

int fm5_small_drain_pending_and_unlock(fm5_small_manager *manager)
{
    drain_pending_locked(manager);
    fm5_unlock(&manager->locked);
    return 0;
}

int fm5_small_process_pending_frees(int wait)
{
    int complete = 1;
    for (unsigned a = 0; a < FM5_SMALL_ARENA_COUNT; a++) {
        for (unsigned c = 0; c < FM5_SMALL_CLASS_COUNT; c++) {
            fm5_small_manager *manager = &fm5_small_managers[a][c];
            if (!manager->pending_free_list)
                continue;
            if (wait ? fm5_lock_with_timeout(&manager->locked, INFINITE) : fm5_try_lock(&manager->locked)) {
                drain_pending_locked(manager);
                fm5_unlock(&manager->locked);
            } else {
                complete = 0;
            }
        }
    }
    return complete;
}

/* ---- walking ---------------------------------------------------------------------------------- */

int fm5_small_walk_span(void *span_address, fm5_walk_visitor visitor, void *context, DWORD timeout_ms)
{
    fm5_small_span *span = span_address;
    fm5_small_manager *manager = span->manager;
    if (!fm5_lock_with_timeout(&manager->locked, timeout_ms))
        return FM5_WALK_INCOMPLETE;
    int result = FM5_WALK_COMPLETE;
    size_t span_size = fm5_medium_block_size(span);
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
            fm5_walk_item block = { user, manager->block_size, manager->block_size - FM5_SMALL_HEADER_SIZE,
                                    FastMM_SmallBlock, manager->arena,
                                    unused || (*fm5_status_word(user) & FM5_STATUS_FREE) != 0, unused };
            if (visitor(&block, context)) {
                result = FM5_WALK_STOPPED;
                break;
            }
        }
    }
    fm5_unlock(&manager->locked);
    return result;
}

/* ---- set-up ----------------------------------------------------------------------------------- */

void fm5_small_initialize(void)
{
    for (unsigned c = 0; c < FM5_SMALL_CLASS_COUNT; c++) {
        uint32_t block_size = fm5_small_block_sizes[c];
        uint32_t optimal = block_size * OPTIMAL_BLOCKS_PER_SPAN;
        if (optimal < MINIMUM_OPTIMAL_SPAN_SIZE)
            optimal = MINIMUM_OPTIMAL_SPAN_SIZE;
        if (optimal > MAXIMUM_OPTIMAL_SPAN_SIZE)
            optimal = MAXIMUM_OPTIMAL_SPAN_SIZE;
        uint32_t blocks = optimal / block_size;
        uint32_t user_bytes_for = FM5_SMALL_SPAN_HEADER_SIZE - FM5_SMALL_HEADER_SIZE;
        for (unsigned a = 0; a < FM5_SMALL_ARENA_COUNT; a++) {
            fm5_small_manager *manager = &fm5_small_managers[a][fm5_small_class_slot(c)];
            manager->first_partially_free = manager->last_partially_free = partial_list_sentinel(manager);
            manager->block_size = (uint16_t)block_size;
            manager->arena = (uint8_t)a;
            manager->class_index = (uint8_t)c;
            manager->block_size_reciprocal = (uint32_t)((((uint64_t)1 << 32) + block_size - 1) / block_size);
            manager->minimum_span_size =
                (uint32_t)fm5_medium_block_size_for(MINIMUM_BLOCKS_PER_SPAN * block_size + user_bytes_for);
            manager->optimal_span_size = (uint32_t)fm5_medium_block_size_for(blocks * block_size + user_bytes_for);
            manager->feed = FM5_SMALL_SPAN_HEADER_SIZE;
        }
    }
}
