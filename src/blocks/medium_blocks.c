/* Medium blocks: spans, bins, coalescing, sequential feed from the end of the span. Every change to a
 * span happens under the lock of the manager that owns it, including feeding (FastMM5 also feeds
 * lock-free; fm5 does not, so that a walk or a free never meets a block whose header is half-written). */
#include "blocks/medium_blocks.h"
#include "blocks/block_status.h"
#include "base/memory_usage.h"
#include "base/address_map.h"
#include "blocks/arena.h"
#include "blocks/strategy.h"
#include "blocks/recycling.h"
#include "blocks/walk.h"
#include <string.h>

fm5_medium_manager fm5_medium_managers[FM5_MAXIMUM_ARENA_COUNT];
size_t fm5_medium_contention_count;
uint32_t fm5_medium_arena_count;

#define IN_PLACE_DOWNSIZE_LIMIT 720u
#define BIN_GROUP_1_START FM5_MEDIUM_BIN_GROUP_1_START
#define BIN_GROUP_2_START FM5_MEDIUM_BIN_GROUP_2_START
#define BIN_GROUP_3_START FM5_MEDIUM_BIN_GROUP_3_START

/* ---- bins ------------------------------------------------------------------------------------- */

/* The bin a free block of `size` bytes belongs in: every block in bin b is at least bin_size(b). */
FM5_INLINE unsigned bin_for_free_block(size_t size)
{
    if (size < BIN_GROUP_2_START)
        return (unsigned)((size - BIN_GROUP_1_START) / 256);
    if (size < BIN_GROUP_3_START)
        return FM5_MEDIUM_BIN_GROUP_2_FIRST_BIN + (unsigned)((size - BIN_GROUP_2_START) / 512);
    size_t bin = FM5_MEDIUM_BIN_GROUP_3_FIRST_BIN + (size - BIN_GROUP_3_START) / 1024;
    return bin > FM5_MEDIUM_BIN_COUNT - 1 ? FM5_MEDIUM_BIN_COUNT - 1 : (unsigned)bin;
}

size_t fm5_medium_block_size_for(size_t user_size)
{
    size_t size = user_size + FM5_MEDIUM_HEADER_SIZE;
    if (size <= BIN_GROUP_1_START)
        return BIN_GROUP_1_START;
    if (size <= BIN_GROUP_2_START)
        return BIN_GROUP_1_START + fm5_round_up(size - BIN_GROUP_1_START, 256);
    if (size <= BIN_GROUP_3_START)
        return BIN_GROUP_2_START + fm5_round_up(size - BIN_GROUP_2_START, 512);
    return BIN_GROUP_3_START + fm5_round_up(size - BIN_GROUP_3_START, 1024);
}

/* The size of the blocks bin `bin` serves: the smallest block it may hold (read only by asserts, which
 * clang sees as no use in unchecked builds). */
static __attribute__((unused)) size_t bin_size(unsigned bin)
{
    if (bin < FM5_MEDIUM_BIN_GROUP_2_FIRST_BIN)
        return BIN_GROUP_1_START + (size_t)bin * 256;
    if (bin < FM5_MEDIUM_BIN_GROUP_3_FIRST_BIN)
        return BIN_GROUP_2_START + (size_t)(bin - FM5_MEDIUM_BIN_GROUP_2_FIRST_BIN) * 512;
    return BIN_GROUP_3_START + (size_t)(bin - FM5_MEDIUM_BIN_GROUP_3_FIRST_BIN) * 1024;
}

/* The bitmaps (the bins' and the spans' block starts) change only under the lock, but may_serve
 * and the pointer checks read them without it: each word is stored whole (relaxed atomic, a plain
 * store on x86), so that a reader sees an old or a new value. */
FM5_INLINE void publish_bitmap(uint32_t *word, uint32_t value)
{
    __atomic_store_n(word, value, __ATOMIC_RELAXED);
}

FM5_INLINE char *span_area_start(const fm5_medium_span *span)
{
    return (char *)span + span->first_block_offset;
}

FM5_INLINE char *span_end(const fm5_medium_span *span)
{
    return (char *)span + span->span_size;
}

/* ---- kept empty spans (medium_blocks.h) --------------------------------------------------------
 * An empty span stays mapped as one free block in its manager's last bin; kept_span_bytes is the sum
 * of those spans over all medium managers. It changes as such a block enters or leaves a bin, under
 * that manager's lock, by atomic adds (the managers' locks are not one lock, so a manager may see
 * another's change late: the age rule then keeps or returns a span more than it would).
 * mapped_span_bytes counts the medium spans mapped (changed under the mapping or releasing manager's
 * lock, by atomic adds) and peak_span_bytes its most since it was last reset; two managers mapping at
 * once may store their peaks out of order and leave it a span low, which only makes the peak rule
 * return kept spans a span earlier. */
static size_t kept_span_bytes;
static size_t mapped_span_bytes;
static size_t peak_span_bytes;

/* The span's bytes when the free block `block` of `size` bytes is all of its span's blocks, else 0. */
FM5_INLINE size_t whole_span_bytes(const fm5_medium_free_links *block, size_t size)
{
    const fm5_medium_span *span = fm5_medium_span_of(block);
    return (const char *)block == span_area_start(span) && (const char *)block + size == span_end(span)
               ? span->span_size : 0;
}

static void bin_insert(fm5_medium_manager *manager, fm5_medium_free_links *block, size_t size)
{
    size_t whole = whole_span_bytes(block, size);
    if (whole) {
        __atomic_add_fetch(&kept_span_bytes, whole, __ATOMIC_RELAXED);
        fm5_medium_span_of(block)->emptied_ms = fm5_os_tick_ms();
        manager->kept_spans++;
    }
    unsigned bin = bin_for_free_block(size);
    FM5_ASSERT(manager->gate.locked && size >= bin_size(bin));
    fm5_medium_free_links *slot = (fm5_medium_free_links *)&manager->bins[bin];
    fm5_medium_free_links *first = manager->bins[bin];
    block->next = first;
    block->prev = slot;
    if (first)
        first->prev = block;
    manager->bins[bin] = block;
    publish_bitmap(&manager->bin_bitmaps[bin / 32], manager->bin_bitmaps[bin / 32] | 1u << (bin % 32));
    publish_bitmap(&manager->group_bitmap, manager->group_bitmap | 1u << (bin / 32));
}

static void bin_remove(fm5_medium_manager *manager, fm5_medium_free_links *block, size_t size)
{
    size_t whole = whole_span_bytes(block, size);
    if (whole) {
        __atomic_sub_fetch(&kept_span_bytes, whole, __ATOMIC_RELAXED);
        manager->kept_spans--;
    }
    block->prev->next = block->next;
    if (block->next)
        block->next->prev = block->prev;
    unsigned bin = bin_for_free_block(size);
    if (!manager->bins[bin]) {
        publish_bitmap(&manager->bin_bitmaps[bin / 32], manager->bin_bitmaps[bin / 32] & ~(1u << (bin % 32)));
        if (!manager->bin_bitmaps[bin / 32])
            publish_bitmap(&manager->group_bitmap, manager->group_bitmap & ~(1u << (bin / 32)));
    }
    FM5_ASSERT(((manager->bin_bitmaps[bin / 32] >> (bin % 32)) & 1) == (manager->bins[bin] != NULL));
}

/* The first non-empty bin at or above `bin`, or -1. */
FM5_INLINE int first_bin_with_block(const fm5_medium_manager *manager, unsigned bin)
{
    unsigned group = bin / 32;
    uint32_t bins = manager->bin_bitmaps[group] & (~0u << (bin % 32));
    if (!bins) {
        uint32_t groups = manager->group_bitmap & (0xFFFFFFFEu << group);
        if (!groups)
            return -1;
        group = (unsigned)__builtin_ctz(groups);
        bins = manager->bin_bitmaps[group];
    }
    return (int)(group * 32 + (unsigned)__builtin_ctz(bins));
}

/* ---- spans and block starts -------------------------------------------------------------------- */

FM5_INLINE uint32_t *block_start_bitmap(const fm5_medium_span *span)
{
    return fm5_medium_block_start_bitmap(span);
}

FM5_INLINE size_t block_index(const fm5_medium_span *span, const void *user)
{
    return (size_t)((const char *)user - (const char *)span) / FM5_MEDIUM_ALIGNMENT;
}

/* Under the lock; pointer checks read the bitmap without it (fm5_medium_is_block_start), so each word
 * is stored whole. */
FM5_INLINE void mark_block_start(fm5_medium_span *span, void *user)
{
    size_t index = block_index(span, user);
    uint32_t *word = &block_start_bitmap(span)[index / 32];
    publish_bitmap(word, *word | 1u << (index % 32));
}

FM5_INLINE void clear_block_start(fm5_medium_span *span, void *user)
{
    size_t index = block_index(span, user);
    uint32_t *word = &block_start_bitmap(span)[index / 32];
    publish_bitmap(word, *word & ~(1u << (index % 32)));
    /* A stale header left behind would let a stale pointer pass the status check. */
    fm5_status_store(user, 0);
}

/* Under the lock; but pointer checks, the unlocked growth test and walks of other arenas' spans read
 * headers without it, so each field is stored whole (relaxed atomics: plain moves on x86). */
FM5_INLINE void write_header(fm5_medium_span *span, char *user, size_t size, uint16_t status)
{
    fm5_medium_header *header = fm5_medium_header_of(user);
    __atomic_store_n(&header->size_multiple, (uint16_t)(size / FM5_MEDIUM_ALIGNMENT), __ATOMIC_RELAXED);
    __atomic_store_n(&header->span_offset_multiple, (uint16_t)((size_t)(user - (char *)span) / FM5_MEDIUM_ALIGNMENT),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&header->is_small_block_span, 0, __ATOMIC_RELAXED);
    fm5_status_store(user, status);
}

/* Turns [user, user + size) into a free block in no bin: its status, its size at its end for the next
 * block's merge, and the next block's flag. */
static void write_free_block(fm5_medium_span *span, char *user, size_t size, uint16_t debug_info)
{
    write_header(span, user, size, (uint16_t)(FM5_STATUS_MEDIUM | FM5_STATUS_FREE | debug_info));
    *(uint32_t *)(user + size - FM5_MEDIUM_HEADER_SIZE - sizeof(uint32_t)) = (uint32_t)size;
    fm5_medium_header_of(user + size)->previous_block_is_free = 1;
}

/* Turns [user, user + size) into a free block, binned when big enough to be reused. */
static void make_free_block(fm5_medium_manager *manager, fm5_medium_span *span, char *user, size_t size,
                            uint16_t debug_info)
{
    write_free_block(span, user, size, debug_info);
    if (size >= FM5_MINIMUM_MEDIUM_BLOCK_SIZE)
        bin_insert(manager, (fm5_medium_free_links *)user, size);
}

/* Under the lock; may_serve reads the feed's bounds without it, so each is stored whole. */
FM5_INLINE void set_feed_end(fm5_medium_manager *manager, char *feed_end)
{
    __atomic_store_n(&manager->feed_end, feed_end, __ATOMIC_RELAXED);
}

/* Only a new span (fresh from the OS but for its end's sentinel header) or none becomes the feed. */
static void set_feed(fm5_medium_manager *manager, fm5_medium_span *span, char *feed_start, char *feed_end)
{
    manager->feed_span = span;
    manager->fresh_floor = feed_end ? feed_end - FM5_MEDIUM_HEADER_SIZE : NULL;
    __atomic_store_n(&manager->feed_start, feed_start, __ATOMIC_RELAXED);
    set_feed_end(manager, feed_end);
}

static void release_span(fm5_medium_manager *manager, fm5_medium_span *span)
{
    fm5_ring_remove(&span->ring);
    if (manager->feed_span == span)
        set_feed(manager, NULL, NULL, NULL);
    size_t size = span->span_size;
    fm5_address_map_remove(span, size);
    fm5_memory_unmap(span, size, 1);
    __atomic_sub_fetch(&mapped_span_bytes, size, __ATOMIC_RELAXED);
}

/* What is left of the feed span becomes an ordinary free block. The block just above the feed point is
 * never free here: freeing it gives its space back to the feed. */
static void retire_feed_span(fm5_medium_manager *manager)
{
    fm5_medium_span *span = manager->feed_span;
    if (!span)
        return;
    char *start = manager->feed_start;
    size_t remainder = (size_t)(manager->feed_end - start);
    set_feed(manager, NULL, NULL, NULL);
    if (remainder == 0)
        return;
    if (remainder == (size_t)(span_end(span) - start)) {
        release_span(manager, span);
        return;
    }
    mark_block_start(span, start);
    fm5_medium_header_of(start)->previous_block_is_free = 0;
    make_free_block(manager, span, start, remainder, 0);
}

static int add_feed_span(fm5_medium_manager *manager)
{
    size_t size = fm5_medium_span_size();
    fm5_medium_span *span = fm5_memory_map(size, 0);
    if (!span)
        return 0;
    if (!fm5_address_map_add(span, size, FM5_GRANULE_MEDIUM_SPAN)) {
        fm5_memory_unmap(span, size, 1);
        return 0;
    }
    size_t mapped = __atomic_add_fetch(&mapped_span_bytes, size, __ATOMIC_RELAXED);
    if (mapped > __atomic_load_n(&peak_span_bytes, __ATOMIC_RELAXED))
        __atomic_store_n(&peak_span_bytes, mapped, __ATOMIC_RELAXED);
    retire_feed_span(manager);
    span->manager = manager;
    span->span_size = (uint32_t)size;
    /* Header, block-start bitmap, then the first block's own header. */
    span->first_block_offset = (uint32_t)fm5_round_up(sizeof(fm5_medium_span) + size / (8 * FM5_MEDIUM_ALIGNMENT) +
                                                      FM5_MEDIUM_HEADER_SIZE, FM5_MEDIUM_ALIGNMENT);
    /* The sentinel after the last block looks like a block in use, so coalescing stops there. */
    fm5_medium_header *sentinel = fm5_medium_header_of((char *)span + size);
    sentinel->status = FM5_STATUS_MEDIUM;
    sentinel->size_multiple = 0;
    fm5_ring_insert_first(&manager->spans, &span->ring);
    set_feed(manager, span, span_area_start(span), span_end(span));
    return 1;
}

/* ---- allocation under the lock ---------------------------------------------------------------- */

/* *zeroed as fm5_medium_allocate_noting_zero says: the user bytes end where the header of the block
 * above (or the span's sentinel) starts. A block given back to the feed has moved feed_end above the
 * fresh floor, and the blocks cut from that space are not zero. */
FM5_INLINE void *take_from_feed(fm5_medium_manager *manager, size_t size, int *zeroed)
{
    if ((size_t)(manager->feed_end - manager->feed_start) < size)
        return NULL;
    fm5_medium_span *span = manager->feed_span;
    char *user = manager->feed_end - size;
    FM5_ASSERT(manager->fresh_floor <= manager->feed_end - FM5_MEDIUM_HEADER_SIZE);
    *zeroed = manager->feed_end - FM5_MEDIUM_HEADER_SIZE == manager->fresh_floor;
    /* Lowered only: a block cut from space given back keeps the floor where the writes reached. */
    if (user - FM5_MEDIUM_HEADER_SIZE < manager->fresh_floor)
        manager->fresh_floor = user - FM5_MEDIUM_HEADER_SIZE;
    write_header(span, user, size, FM5_STATUS_MEDIUM);
    fm5_medium_header_of(user)->previous_block_is_free = 0;
    mark_block_start(span, user);
    set_feed_end(manager, user);
    return user;
}

/* A block of `size` bytes from the bins, looking from `bin` (bin_for_free_block(size)) up. */
static void *take_from_bins(fm5_medium_manager *manager, size_t size, unsigned first_bin)
{
    char *user;
    size_t available;
    fm5_medium_span *span;
    for (;;) {
        int bin = first_bin_with_block(manager, first_bin);
        if (bin < 0)
            return NULL;
        user = (char *)manager->bins[bin];
        available = fm5_medium_block_size(user);
        span = fm5_medium_span_of(user);
        bin_remove(manager, (fm5_medium_free_links *)user, available);
        if (!(fm5_status_load(user) & FM5_STATUS_HAS_DEBUG_INFO) ||
            fm5_recycling_may_reuse(user, available - FM5_MEDIUM_HEADER_SIZE, 1))
            break;
        /* A corrupted freed debug block is quarantined: a free block in no bin, still marked free and a
         * debug block, so that scans keep checking it and no neighbour merges with it. */
        fm5_recycling_quarantine(user);
    }
    /* Split off any surplus, even one too small to bin: it can still merge with a neighbour later, and
     * the block's usable size then matches its request exactly. */
    if (available > size) {
        write_header(span, user, size, FM5_STATUS_MEDIUM);
        char *tail = user + size;
        mark_block_start(span, tail);
        fm5_medium_header_of(tail)->previous_block_is_free = 0;
        make_free_block(manager, span, tail, available - size, 0);
    } else {
        write_header(span, user, available, FM5_STATUS_MEDIUM);
        fm5_medium_header_of(user + available)->previous_block_is_free = 0;
    }
    return user;
}

FM5_INLINE void free_locked(fm5_medium_manager *manager, char *user);
static void release_aged_kept_spans(fm5_medium_manager *manager);

/* The arena skeleton's release step, for a block freed under the lock and a queued one alike: both
 * carry the pending mark (fm5_arena_free claims with it), which stays until the release writes the
 * block's new state (a free block's header, or none where the block stops being a block start).
 * Cleared first, it would make the block look live meanwhile, and a racing second free would claim
 * it again. */
static void release_queued(void *manager, void *block)
{
    free_locked(manager, block);
}

/* A peek without the lock, to pass over arenas that cannot serve `size` without a new span: pending
 * frees, a fitting bin or enough unfed space. The words may be changing, so it only tests them (no bit
 * scan of a word that may read as 0, no read through a pointer), and a wrong guess costs a lock. */
static int may_serve(const fm5_medium_manager *manager, size_t size, unsigned bin)
{
    unsigned group = bin / 32;
    /* As integers: the two words may come from different spans, or one may be NULL. */
    return (uintptr_t)__atomic_load_n(&manager->feed_end, __ATOMIC_RELAXED) -
                   (uintptr_t)__atomic_load_n(&manager->feed_start, __ATOMIC_RELAXED) >= size ||
           fm5_atomic_load_ptr((void *volatile *)&manager->gate.pending_free_list) != NULL ||
           (__atomic_load_n(&manager->bin_bitmaps[group], __ATOMIC_RELAXED) & (~0u << (bin % 32))) != 0 ||
           (__atomic_load_n(&manager->group_bitmap, __ATOMIC_RELAXED) & (0xFFFFFFFEu << group)) != 0;
}

/* The request of one allocation scan: the block size and its first bin, worked out once. */
typedef struct medium_request {
    size_t size;
    unsigned bin;
    int zeroed;       /* out: fm5_medium_allocate_noting_zero's */
} medium_request;

/* Bins before the feed: a freed block is reused while its lines may still be cached, and the unfed
 * space is kept for what the bins cannot serve. */
FM5_INLINE void *take_locked(fm5_medium_manager *manager, medium_request *request)
{
    fm5_arena_drain(&manager->gate, release_queued, manager);
    if (FM5_UNLIKELY(manager->kept_spans))
        release_aged_kept_spans(manager);
    void *user = take_from_bins(manager, request->size, request->bin);
    return user ? user : take_from_feed(manager, request->size, &request->zeroed);
}

#if FM5_CHECKED
uint32_t fm5_medium_first_pass_skips;
#endif

/* First pass: only an arena that is idle and can probably serve the request as it is. */
static void *first_pass(void *arena, void *context, int *final)
{
    (void)final;
    fm5_medium_manager *manager = arena;
    medium_request *request = context;
#if FM5_CHECKED
    if ((__atomic_load_n(&fm5_medium_first_pass_skips, __ATOMIC_RELAXED) >> manager->arena) & 1)
        return NULL;
#endif
    if (fm5_lock_is_held(&manager->gate.locked) || !may_serve(manager, request->size, request->bin) ||
        !fm5_try_lock(&manager->gate.locked))
        return NULL;
    void *user = take_locked(manager, request);
    fm5_unlock(&manager->gate.locked);
    return user;
}

static int release_kept_spans(const fm5_medium_manager *skip, int wait);

/* Under the lock: a new feed span. What other managers keep gives way before the usage limit is
 * reached (which would report an event and use up its one grace), before the medium spans would pass
 * their peak (medium_blocks.h), and after a refusal by the OS; this
 * manager keeps none (a kept span would have served the request). The other managers' locks are only
 * tried, so the lock order (docs/design.md) does not change. */
static int feed_new_span(fm5_medium_manager *manager)
{
    size_t limit = fm5_memory_limit();
    size_t size = fm5_medium_span_size();
    size_t mapped = __atomic_load_n(&mapped_span_bytes, __ATOMIC_RELAXED);
    if (__atomic_load_n(&kept_span_bytes, __ATOMIC_RELAXED) &&
        ((FM5_UNLIKELY(limit != 0) && fm5_memory_usage() + size > limit) ||
         mapped + size > __atomic_load_n(&peak_span_bytes, __ATOMIC_RELAXED)))
        release_kept_spans(manager, 0);
    if (add_feed_span(manager))
        return 1;
    if (!__atomic_load_n(&kept_span_bytes, __ATOMIC_RELAXED))
        return 0;
    release_kept_spans(manager, 0);
    return add_feed_span(manager);
}

/* Second pass: any arena that can be locked, creating a span if it must. */
static void *second_pass(void *arena, void *context, int *final)
{
    fm5_medium_manager *manager = arena;
    medium_request *request = context;
    if (!fm5_try_lock(&manager->gate.locked))
        return NULL;
    void *user = take_locked(manager, request);
    if (!user) {
        if (feed_new_span(manager))
            user = take_from_feed(manager, request->size, &request->zeroed);
        else
            *final = 1;
    }
    fm5_unlock(&manager->gate.locked);
    return user;
}

void *fm5_medium_allocate_noting_zero(size_t size, int *zeroed)
{
    medium_request request = { size, bin_for_free_block(size), 0 };
    void *user = fm5_arena_allocate(fm5_medium_managers, sizeof fm5_medium_managers[0], fm5_medium_arena_count, 0,
                                    first_pass, second_pass, NULL, &request, &fm5_medium_contention_count);
    *zeroed = user && request.zeroed;
    return user;
}

void *fm5_medium_allocate(size_t size)
{
    int zeroed;
    return fm5_medium_allocate_noting_zero(size, &zeroed);
}

void *fm5_medium_get_mem(size_t user_size)
{
    return fm5_medium_allocate(fm5_medium_block_size_for(user_size));
}

/* ---- freeing ---------------------------------------------------------------------------------- */

/* Whether a span about to be left empty stays (as a free block, kept_span_bytes above). */
static int keep_empty_span(void)
{
    return fm5_optimization_strategy != FastMM_OptimizeForLowMemoryUsage;
}

/* Under the lock: releases the empty spans `manager` keeps, all of them, or (`age` > 0) those kept
 * for at least `age` ms at `now` while all managers keep more than FM5_MEDIUM_KEPT_SPAN_BYTES. Only
 * the last bin holds whole spans, which are larger than any block a bin is for. */
static void release_kept_spans_locked(fm5_medium_manager *manager, uint32_t now, uint32_t age)
{
    fm5_medium_free_links *block = manager->bins[FM5_MEDIUM_BIN_COUNT - 1];
    while (block && manager->kept_spans &&
           (age == 0 || __atomic_load_n(&kept_span_bytes, __ATOMIC_RELAXED) > FM5_MEDIUM_KEPT_SPAN_BYTES)) {
        fm5_medium_free_links *next = block->next;
        size_t size = fm5_medium_block_size(block);
        fm5_medium_span *span = fm5_medium_span_of(block);
        if (whole_span_bytes(block, size) && (age == 0 || now - span->emptied_ms >= age)) {
            bin_remove(manager, block, size);
            release_span(manager, span);
        }
        block = next;
    }
}

/* Under the lock, with spans kept: the age rule (medium_blocks.h). */
static void release_aged_kept_spans(fm5_medium_manager *manager)
{
    if (__atomic_load_n(&kept_span_bytes, __ATOMIC_RELAXED) <= FM5_MEDIUM_KEPT_SPAN_BYTES)
        return;
    uint32_t now = fm5_os_tick_ms();
    if (now - manager->kept_swept_ms < FM5_MEDIUM_KEPT_SPAN_AGE_MS / 2)
        return;
    manager->kept_swept_ms = now;
    release_kept_spans_locked(manager, now, FM5_MEDIUM_KEPT_SPAN_AGE_MS);
}

/* The kept spans of every manager but `skip` (NULL for none); a busy manager is passed over unless
 * `wait`. Returns 0 if one was passed over. */
static int release_kept_spans(const fm5_medium_manager *skip, int wait)
{
    int complete = 1;
    for (unsigned a = 0; a < fm5_medium_arena_count && __atomic_load_n(&kept_span_bytes, __ATOMIC_RELAXED); a++) {
        fm5_medium_manager *manager = &fm5_medium_managers[a];
        if (manager == skip)
            continue;
        if (!(wait ? fm5_lock_with_timeout(&manager->gate.locked, FM5_WAIT_FOREVER)
                   : fm5_try_lock(&manager->gate.locked))) {
            complete = 0;
            continue;
        }
        release_kept_spans_locked(manager, 0, 0);
        fm5_arena_unlock(&manager->gate, release_queued, manager);
    }
    return complete;
}

int fm5_medium_release_kept_spans(int wait)
{
    int complete = release_kept_spans(NULL, wait);
    if (complete)
        __atomic_store_n(&peak_span_bytes, __atomic_load_n(&mapped_span_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    return complete;
}

size_t fm5_medium_kept_span_bytes(void)
{
    return __atomic_load_n(&kept_span_bytes, __ATOMIC_RELAXED);
}

/* Releases the block at `user`, one leaving use or a free one taken out of its bin, as a free does:
 * merged with the free neighbours that carry no debug information (unless debug mode keeps freed
 * blocks apart), then given back to the feed, released with its span when that leaves the span
 * empty, or binned. Its own status and debug information are dropped. Returns 1 if the span was
 * released. */
FM5_INLINE int merge_and_release(fm5_medium_manager *manager, char *user)
{
    fm5_medium_span *span = fm5_medium_span_of(user);
    size_t size = fm5_medium_block_size(user);
    int merge = !fm5_recycling_never_merges_medium_blocks();

    char *next = user + size;
    /* The neighbour's owner may be setting its pending-free bit right now: one whole read. */
    if (merge && fm5_status_load(next) == (FM5_STATUS_MEDIUM | FM5_STATUS_FREE)) {
        size_t next_size = fm5_medium_block_size(next);
        if (next_size >= FM5_MINIMUM_MEDIUM_BLOCK_SIZE)
            bin_remove(manager, (fm5_medium_free_links *)next, next_size);
        clear_block_start(span, next);
        size += next_size;
    }
    size_t previous_size = fm5_medium_header_of(user)->previous_block_is_free
                               ? *(uint32_t *)(user - FM5_MEDIUM_HEADER_SIZE - sizeof(uint32_t))
                               : 0;
    if (merge && previous_size &&
        fm5_status_load(user - previous_size) == (FM5_STATUS_MEDIUM | FM5_STATUS_FREE)) {
        char *previous = user - previous_size;
        if (previous_size >= FM5_MINIMUM_MEDIUM_BLOCK_SIZE)
            bin_remove(manager, (fm5_medium_free_links *)previous, previous_size);
        clear_block_start(span, user);
        user = previous;
        size += previous_size;
    }

    if (span == manager->feed_span && user == manager->feed_end) {
        /* Adjacent to the unfed space: give it back to the feed. */
        clear_block_start(span, user);
        set_feed_end(manager, user + size);
        fm5_medium_header_of(user + size)->previous_block_is_free = 0;
        if (manager->feed_end == span_end(span) &&
            fm5_optimization_strategy == FastMM_OptimizeForLowMemoryUsage) {
            release_span(manager, span);
            return 1;
        }
        return 0;
    }
    if (user == span_area_start(span) && user + size == span_end(span) && !keep_empty_span()) {
        release_span(manager, span);
        return 1;
    }
    make_free_block(manager, span, user, size, 0);
    return 0;
}

/* A freed debug block that debug mode no longer keeps, in no bin: checked as before a reuse, since
 * merging overwrites it. Intact, it is released as any other block; corrupted, it is reported and
 * quarantined as take_from_bins would, a free block in no bin that keeps its debug information. */
static void recycle_freed_debug_block(fm5_medium_manager *manager, char *user)
{
    FM5_ASSERT(manager->gate.locked && (fm5_status_load(user) & FM5_STATUS_HAS_DEBUG_INFO));
    size_t size = fm5_medium_block_size(user);
    if (fm5_recycling_may_reuse(user, size - FM5_MEDIUM_HEADER_SIZE, 1)) {
        merge_and_release(manager, user);
        return;
    }
    write_free_block(fm5_medium_span_of(user), user, size, FM5_STATUS_HAS_DEBUG_INFO);
    fm5_recycling_quarantine(user);
}

FM5_INLINE void free_locked(fm5_medium_manager *manager, char *user)
{
    if (!(fm5_status_load(user) & FM5_STATUS_HAS_DEBUG_INFO)) {
        merge_and_release(manager, user);
        if (FM5_UNLIKELY(manager->kept_spans))
            release_aged_kept_spans(manager);
        return;
    }
    /* While debug mode is on, a freed debug block keeps its debug information so that it can be
     * checked before reuse: it is binned as it is and never merged (its neighbours merge only when they
     * carry none). After debug mode, nothing would ever check or merge it: it is recycled now. */
    if (fm5_recycling_keeps_freed_debug_blocks()) {
        make_free_block(manager, fm5_medium_span_of(user), user, fm5_medium_block_size(user),
                        FM5_STATUS_HAS_DEBUG_INFO);
        return;
    }
    recycle_freed_debug_block(manager, user);
}

/* Live: exactly "medium", with or without debug information. Queued: marked pending. */
static const fm5_arena_status_rule medium_status_rule = { (uint16_t)~FM5_STATUS_HAS_DEBUG_INFO, FM5_STATUS_MEDIUM,
                                                          FM5_STATUS_PENDING_FREE };

int fm5_medium_free(void *user)
{
    fm5_medium_manager *manager = fm5_medium_span_of(user)->manager;
    return fm5_arena_free(&manager->gate, user, &fm5_medium_header_of(user)->status, medium_status_rule,
                          release_queued, release_queued, manager);
}

int fm5_medium_claim_for_cache(void *user, fm5_claimer *mine)
{
    return fm5_status_load(user) == FM5_STATUS_MEDIUM &&
           fm5_claims_claim_u16(mine, &fm5_medium_header_of(user)->status, FM5_STATUS_MEDIUM,
                                FM5_STATUS_MEDIUM_CACHED);
}

void fm5_medium_release_cached(void *user)
{
    FM5_ASSERT(fm5_status_load(user) == FM5_STATUS_MEDIUM_CACHED);
    /* Queued from here on: still not live (a second free fails), and no longer free to walks, which
     * drain the pending list first. Only the cache's owner writes the word now. */
    fm5_status_store(user, FM5_STATUS_MEDIUM | FM5_STATUS_PENDING_FREE);
    fm5_medium_manager *manager = fm5_medium_span_of(user)->manager;
    fm5_arena_release_claimed(&manager->gate, user, release_queued, release_queued, manager);
}

int fm5_medium_requeue_quarantined(void *user)
{
    fm5_medium_manager *manager = fm5_medium_span_of(user)->manager;
    fm5_lock_with_timeout(&manager->gate.locked, FM5_WAIT_FOREVER);
    FM5_ASSERT((fm5_status_load(user) & (uint16_t)~FM5_STATUS_HAS_DEBUG_INFO) ==
               (FM5_STATUS_MEDIUM | FM5_STATUS_FREE));
    size_t size = fm5_medium_block_size(user);
    int intact = fm5_recycling_may_reuse(user, size - FM5_MEDIUM_HEADER_SIZE, 0);
    /* Back as the freed debug block it is while debug mode keeps those; after, recycled. */
    if (intact && !fm5_recycling_keeps_freed_debug_blocks())
        merge_and_release(manager, user);
    else if (intact && size >= FM5_MINIMUM_MEDIUM_BLOCK_SIZE)
        bin_insert(manager, (fm5_medium_free_links *)(void *)user, size);
    fm5_arena_unlock(&manager->gate, release_queued, manager);
    return intact;
}

/* Free blocks without debug information that debug mode's "never merge" left side by side in `span`:
 * each such block is released again, as freeing it now would, which merges its free neighbour into
 * it, until no two are neighbours. Walking from the span's start, a block's free predecessor has
 * taken it in already. */
static void merge_kept_apart(fm5_medium_manager *manager, fm5_medium_span *span)
{
    const unsigned free_block = FM5_STATUS_MEDIUM | FM5_STATUS_FREE;
    char *user = span == manager->feed_span ? manager->feed_end : span_area_start(span);
    while (user < span_end(span)) {
        size_t size = fm5_medium_block_size(user);
        /* The span's sentinel is never free, so the run ends in the span. */
        if (fm5_status_load(user) != free_block || fm5_status_load(user + size) != free_block) {
            user += size;
            continue;
        }
        if (size >= FM5_MINIMUM_MEDIUM_BLOCK_SIZE)
            bin_remove(manager, (fm5_medium_free_links *)(void *)user, size);
        if (merge_and_release(manager, user))
            return;
        /* Given back to the feed, or binned where it was: bigger (look at it again), or as it was if
         * debug mode came back meanwhile and keeps blocks apart again (go on). */
        if (span == manager->feed_span && manager->feed_end > user)
            user = manager->feed_end;
        else if (fm5_medium_block_size(user) == size)
            user += size;
    }
}

int fm5_medium_recycle_freed_debug_blocks(uint32_t timeout_ms)
{
    int complete = 1;
    for (unsigned a = 0; a < fm5_medium_arena_count; a++) {
        fm5_medium_manager *manager = &fm5_medium_managers[a];
        if (!fm5_lock_with_timeout(&manager->gate.locked, timeout_ms)) {
            complete = 0;
            continue;
        }
        /* Frees queued meanwhile first: a debug block among them is recycled by its free. A debug mode
         * that came back (seen under the lock) keeps freed debug blocks again; these wait for its end. */
        fm5_arena_drain(&manager->gate, release_queued, manager);
        if (fm5_recycling_keeps_freed_debug_blocks()) {
            fm5_arena_unlock(&manager->gate, release_queued, manager);
            return 0;
        }
        /* Out of the bins first, linked through their first pointer (a debug header's free-list word):
         * recycling one merges it into binned neighbours, never into another one still waiting here,
         * whose status still carries HasDebugInfo. Quarantined blocks are in no bin, so never met. */
        char *waiting = NULL;
        for (int bin = first_bin_with_block(manager, 0); bin >= 0;
             bin = bin + 1 < FM5_MEDIUM_BIN_COUNT ? first_bin_with_block(manager, (unsigned)bin + 1) : -1) {
            fm5_medium_free_links *block = manager->bins[bin];
            while (block) {
                fm5_medium_free_links *next = block->next;
                if (fm5_status_load(block) & FM5_STATUS_HAS_DEBUG_INFO) {
                    bin_remove(manager, block, fm5_medium_block_size(block));
                    *(char **)(void *)block = waiting;
                    waiting = (char *)block;
                }
                block = next;
            }
        }
        while (waiting) {
            char *next = *(char **)waiting;
            recycle_freed_debug_block(manager, waiting);
            waiting = next;
        }
        for (fm5_ring *node = manager->spans.next; node != &manager->spans;) {
            fm5_ring *next = node->next;
            merge_kept_apart(manager, FM5_CONTAINER_OF(node, fm5_medium_span, ring));
            node = next;
        }
        fm5_medium_check_manager(manager);
        fm5_arena_unlock(&manager->gate, release_queued, manager);
    }
    return complete;
}

int fm5_medium_process_pending_frees(int wait)
{
    int complete = 1;
    for (unsigned a = 0; a < fm5_medium_arena_count; a++)
        complete &= fm5_arena_process_pending(&fm5_medium_managers[a].gate, wait, release_queued,
                                              &fm5_medium_managers[a]);
    return complete;
}

/* ---- resizing: in place, or within the arena -------------------------------------------------- */

static int grow_locked(fm5_medium_manager *manager, char *user, size_t new_user_size)
{
    fm5_medium_span *span = fm5_medium_span_of(user);
    size_t size = fm5_medium_block_size(user);
    char *next = user + size;
    /* The neighbour's owner may be setting its pending-free bit right now: one whole read. */
    if (fm5_status_load(next) != (FM5_STATUS_MEDIUM | FM5_STATUS_FREE))
        return 0;
    size_t next_size = fm5_medium_block_size(next);
    size_t needed = fm5_round_up(new_user_size + FM5_MEDIUM_HEADER_SIZE, FM5_MEDIUM_ALIGNMENT);
    if (size + next_size < needed)
        return 0;
    /* Grow by a quarter at least, so that a block grown step by step moves rarely. */
    size_t old_user_size = size - FM5_MEDIUM_HEADER_SIZE;
    size_t wanted = fm5_round_up(old_user_size + old_user_size / 4 + FM5_MEDIUM_HEADER_SIZE, FM5_MEDIUM_ALIGNMENT);
    if (wanted > FM5_MAXIMUM_MEDIUM_BLOCK_SIZE)
        wanted = FM5_MAXIMUM_MEDIUM_BLOCK_SIZE;
    if (wanted < needed)
        wanted = needed;
    if (wanted > size + next_size)
        wanted = size + next_size;

    if (next_size >= FM5_MINIMUM_MEDIUM_BLOCK_SIZE)
        bin_remove(manager, (fm5_medium_free_links *)next, next_size);
    clear_block_start(span, next);
    size_t tail_size = size + next_size - wanted;
    if (tail_size > 0) {
        char *tail = user + wanted;
        mark_block_start(span, tail);
        fm5_medium_header_of(tail)->previous_block_is_free = 0;
        make_free_block(manager, span, tail, tail_size, 0);
    } else {
        fm5_medium_header_of(user + wanted)->previous_block_is_free = 0;
    }
    fm5_medium_header_of(user)->size_multiple = (uint16_t)(wanted / FM5_MEDIUM_ALIGNMENT);
    return 1;
}

static void shrink_locked(fm5_medium_manager *manager, char *user, size_t new_user_size)
{
    fm5_medium_span *span = fm5_medium_span_of(user);
    size_t size = fm5_medium_block_size(user);
    size_t wanted = fm5_round_up(new_user_size + FM5_MEDIUM_HEADER_SIZE, FM5_MEDIUM_ALIGNMENT);
    if (wanted < FM5_MINIMUM_MEDIUM_BLOCK_SIZE)
        wanted = FM5_MINIMUM_MEDIUM_BLOCK_SIZE;
    if (wanted >= size)
        return;
    char *tail = user + wanted;
    fm5_medium_header_of(user)->size_multiple = (uint16_t)(wanted / FM5_MEDIUM_ALIGNMENT);
    write_header(span, tail, size - wanted, FM5_STATUS_MEDIUM);
    fm5_medium_header_of(tail)->previous_block_is_free = 0;
    mark_block_start(span, tail);
    free_locked(manager, tail);
}

/* Under the lock: a free block of the arena's bins for a block of `user`'s that shrinks to
 * `new_user_size`, when the best-fitting one is smaller than the block itself; else NULL.
 * Why: in-place shrinking keeps the small block where the big one was and frees only the tail, so the
 * holes left are the tails, while the holes that fit the small block stay empty. In st_realloc_use
 * (blocks of up to 256 KB resized to random sizes) that grew the free medium bytes every round: 35.5,
 * 56.6 and 67.3 MB after rounds 2-4 (Win64, scripts/measure-medium-holes.sh), some 124 MB live; moved,
 * 13.3, 15.3 and 16.7 MB. A bigger free block would be a worse fit than the block's own place. The
 * price is the copy: README.md, "Reallocation". */
static char *take_smaller_free_block(fm5_medium_manager *manager, char *user, size_t new_user_size)
{
    size_t wanted = fm5_medium_block_size_for(new_user_size);
    unsigned bin = bin_for_free_block(wanted);
    int found = first_bin_with_block(manager, bin);
    if (found < 0 || fm5_medium_block_size((char *)manager->bins[found]) >= fm5_medium_block_size(user))
        return NULL;
    return take_from_bins(manager, wanted, bin);
}

/* See medium_blocks.h. */
void *fm5_medium_resize(void *user, size_t new_user_size)
{
    size_t available = fm5_medium_block_size(user) - FM5_MEDIUM_HEADER_SIZE;
    int grow = new_user_size > available;
    if (!grow && (available / 2 <= new_user_size))
        return user;
    if (!grow && new_user_size < IN_PLACE_DOWNSIZE_LIMIT)
        return NULL;
    if (grow) {
        /* Check without the lock first: most growths have no free neighbour and must move anyway. */
        size_t size = available + FM5_MEDIUM_HEADER_SIZE;
        fm5_medium_header *next_header = fm5_medium_header_of((char *)user + size);
        if (fm5_status_load((char *)user + size) != (FM5_STATUS_MEDIUM | FM5_STATUS_FREE) ||
            size + (size_t)__atomic_load_n(&next_header->size_multiple, __ATOMIC_RELAXED) * FM5_MEDIUM_ALIGNMENT <
                new_user_size + FM5_MEDIUM_HEADER_SIZE)
            return NULL;
    }
    fm5_medium_manager *manager = fm5_medium_span_of(user)->manager;
    fm5_lock_with_timeout(&manager->gate.locked, FM5_WAIT_FOREVER);
    void *result = user;
    if (grow) {
        if (!grow_locked(manager, user, new_user_size))
            result = NULL;
    } else {
        result = take_smaller_free_block(manager, user, new_user_size);
        if (!result) {
            shrink_locked(manager, user, new_user_size);
            result = user;
        }
    }
    fm5_arena_unlock(&manager->gate, release_queued, manager);
    if (result != user && result != NULL) {
        /* The copy outside the lock; the old block is still this caller's until freed. */
        memcpy(result, user, new_user_size);
        fm5_medium_free(user);
    }
    return result;
}

/* ---- walking ---------------------------------------------------------------------------------- */

static int walk_span(fm5_medium_manager *manager, fm5_medium_span *span, unsigned arena,
                     fm5_walk_visitor visitor, void *context, uint32_t timeout_ms, fm5_span_walker small_span_walker)
{
    int result = FM5_WALK_COMPLETE;
    fm5_walk_item item = { span, span->span_size, 0, FastMM_MediumBlockSpan, arena, 0, 0 };
    if (visitor(&item, context))
        return FM5_WALK_STOPPED;
    char *user = span_area_start(span);
    if (span == manager->feed_span && manager->feed_end > user) {
        fm5_walk_item unused = { user, (size_t)(manager->feed_end - user), 0, FastMM_MediumBlock, arena, 1, 1 };
        if (visitor(&unused, context))
            return FM5_WALK_STOPPED;
        user = manager->feed_end;
    }
    for (char *end = span_end(span); user < end; user += fm5_medium_block_size(user)) {
        fm5_medium_header *header = fm5_medium_header_of(user);
        size_t size = fm5_medium_block_size(user);
        if (size == 0)
            break;
        /* Set by the small manager after it has laid the span out (a release store): acquire. */
        /* A free queued on the pending list marks the status word while this walk holds the lock: one
         * whole read of it. */
        unsigned status = fm5_status_load(user);
        if (__atomic_load_n(&header->is_small_block_span, __ATOMIC_ACQUIRE) && !(status & FM5_STATUS_FREE)) {
            int small = small_span_walker(user, visitor, context, timeout_ms);
            if (small == FM5_WALK_STOPPED)
                return small;
            if (small == FM5_WALK_INCOMPLETE)
                result = small;
            if (small != FM5_WALK_NOT_A_SPAN)
                continue;
        }
        fm5_walk_item block = { user, size, size - FM5_MEDIUM_HEADER_SIZE, FastMM_MediumBlock, arena,
                                (status & FM5_STATUS_FREE) != 0, 0 };
        if (visitor(&block, context))
            return FM5_WALK_STOPPED;
    }
    return result;
}

int fm5_medium_walk(fm5_walk_visitor visitor, void *context, uint32_t timeout_ms, fm5_span_walker small_span_walker)
{
    int result = FM5_WALK_COMPLETE;
    for (unsigned a = 0; a < fm5_medium_arena_count; a++) {
        fm5_medium_manager *manager = &fm5_medium_managers[a];
        if (!fm5_lock_with_timeout(&manager->gate.locked, timeout_ms)) {
            result = FM5_WALK_INCOMPLETE;
            continue;
        }
        /* Blocks freed while another thread held the lock are free: released before the walk sees
         * them, so that it never reports them in use. */
        fm5_arena_drain(&manager->gate, release_queued, manager);
        fm5_medium_check_manager(manager);
        for (fm5_ring *node = manager->spans.next; node != &manager->spans; node = node->next) {
            fm5_medium_span *span = FM5_CONTAINER_OF(node, fm5_medium_span, ring);
            int r = walk_span(manager, span, a, visitor, context, timeout_ms, small_span_walker);
            if (r == FM5_WALK_STOPPED) {
                fm5_unlock(&manager->gate.locked);
                return r;
            }
            if (r == FM5_WALK_INCOMPLETE)
                result = r;
        }
        fm5_unlock(&manager->gate.locked);
    }
    return result;
}

/* ---- invariants ------------------------------------------------------------------------------- */

#if FM5_CHECKED
static void check_span(const fm5_medium_manager *manager, const fm5_medium_span *span)
{
    FM5_ASSERT(span->manager == manager && span->span_size % FM5_OS_GRANULARITY == 0 &&
               span->span_size <= FM5_MAXIMUM_MEDIUM_SPAN_SIZE);
    char *user = span_area_start(span);
    if (span == manager->feed_span)
        user = manager->feed_end;
    size_t blocks = 0, starts = 0;
    for (size_t word = 0; word < span->span_size / FM5_MEDIUM_ALIGNMENT / 32; word++)
        starts += (size_t)__builtin_popcount(fm5_medium_block_start_bitmap(span)[word]);
    while (user < span_end(span)) {
        size_t size = fm5_medium_block_size(user);
        FM5_ASSERT(size >= FM5_MEDIUM_ALIGNMENT && user + size <= span_end(span));
        FM5_ASSERT(fm5_medium_is_block_start(span, user) && fm5_medium_span_of(user) == span);
        /* A free of the block by another thread may be marking it meanwhile: one whole read. */
        unsigned status = fm5_status_load(user);
        FM5_ASSERT((status & FM5_STATUS_MEDIUM) && !(status & FM5_STATUS_SMALL));
        /* A cached block is free but unmerged, in no bin: its neighbour does not know it is free. */
        if ((status & (FM5_STATUS_FREE | FM5_STATUS_PENDING_FREE)) == FM5_STATUS_FREE) {
            FM5_ASSERT(*(const uint32_t *)(user + size - FM5_MEDIUM_HEADER_SIZE - sizeof(uint32_t)) == size);
            FM5_ASSERT(fm5_medium_header_of(user + size)->previous_block_is_free == 1);
        }
        user += size;
        blocks++;
    }
    FM5_ASSERT(user == span_end(span));
    FM5_ASSERT(starts == blocks);  /* a bit for every block start, and none elsewhere */
}
#endif

void fm5_medium_check_manager(const fm5_medium_manager *manager)
{
#if FM5_CHECKED
    FM5_ASSERT(manager->gate.locked);
    FM5_ASSERT(manager->feed_span ? manager->feed_start == span_area_start(manager->feed_span) &&
                                        manager->feed_start <= manager->feed_end &&
                                        manager->feed_end <= span_end(manager->feed_span) &&
                                        manager->fresh_floor >= manager->feed_start - FM5_MEDIUM_HEADER_SIZE &&
                                        manager->fresh_floor <= manager->feed_end - FM5_MEDIUM_HEADER_SIZE
                                  : !manager->feed_start && !manager->feed_end && !manager->fresh_floor);
    for (unsigned group = 0; group < FM5_MEDIUM_BIN_GROUP_COUNT; group++)
        FM5_ASSERT(((manager->group_bitmap >> group) & 1) == (manager->bin_bitmaps[group] != 0));
    for (unsigned bin = 0; bin < FM5_MEDIUM_BIN_COUNT; bin++) {
        FM5_ASSERT(((manager->bin_bitmaps[bin / 32] >> (bin % 32)) & 1) == (manager->bins[bin] != NULL));
        const fm5_medium_free_links *slot = (const fm5_medium_free_links *)&manager->bins[bin];
        const fm5_medium_free_links *previous = slot;
        for (const fm5_medium_free_links *block = manager->bins[bin]; block; block = block->next) {
            size_t size = fm5_medium_block_size(block);
            FM5_ASSERT(block->prev == previous);
            FM5_ASSERT((fm5_status_load(block) & (uint16_t)~FM5_STATUS_HAS_DEBUG_INFO) ==
                       (FM5_STATUS_MEDIUM | FM5_STATUS_FREE));
            FM5_ASSERT(size >= bin_size(bin) && (bin == FM5_MEDIUM_BIN_COUNT - 1 || size < bin_size(bin + 1)));
            FM5_ASSERT(fm5_medium_is_block_start(fm5_medium_span_of(block), block));
            previous = block;
        }
    }
    uint32_t kept = 0;
    for (const fm5_medium_free_links *block = manager->bins[FM5_MEDIUM_BIN_COUNT - 1]; block; block = block->next)
        kept += whole_span_bytes(block, fm5_medium_block_size(block)) != 0;
    FM5_ASSERT(kept == manager->kept_spans);
    for (const fm5_ring *node = manager->spans.next; node != &manager->spans; node = node->next) {
        FM5_ASSERT(node->next->prev == node);
        check_span(manager, FM5_CONTAINER_OF(node, fm5_medium_span, ring));
    }
#else
    (void)manager;
#endif
}

/* An arena is prepared when the arena count first reaches it. */
static unsigned prepared_arenas;

void fm5_medium_set_arena_count(unsigned count)
{
    FM5_ASSERT(count >= 1 && count <= FM5_MAXIMUM_ARENA_COUNT);
    for (; prepared_arenas < count; prepared_arenas++) {
        fm5_medium_manager *manager = &fm5_medium_managers[prepared_arenas];
        fm5_ring_init(&manager->spans);
        manager->arena = prepared_arenas;
    }
    fm5_medium_arena_count = count;
}

void fm5_medium_initialize(void)
{
    fm5_medium_set_arena_count(FM5_DEFAULT_MEDIUM_ARENA_COUNT);
}
