/* Large blocks, each its own OS mapping. */
#include "blocks/large_blocks.h"
#include "blocks/block_status.h"
#include "base/memory_usage.h"
#include "base/address_map.h"
#include "blocks/arena.h"
#include "blocks/walk.h"

fm5_large_manager fm5_large_managers[FM5_LARGE_ARENA_COUNT];
size_t fm5_large_contention_count;

static size_t region_size_for(size_t user_size)
{
    return fm5_round_up(user_size + FM5_LARGE_HEADER_SIZE, FM5_OS_GRANULARITY);
}

static void release_regions(fm5_large_header *header)
{
    size_t size = header->block_size;
    fm5_address_map_remove(header, size);
    /* A block grown in place is several mappings (segment_count); the OS layer releases each. */
    fm5_memory_unmap(header, size, header->segment_count);
}

/* The arena skeleton's release steps run under the lock and only unlink: the unmapping happens after
 * the unlock, from the chain they collect in the context (linked through ring.next). */
static void collect_queued(void *released, void *user)
{
    fm5_large_header *header = fm5_large_header_of(user);
    fm5_ring_remove(&header->ring);
    header->ring.next = *(fm5_ring **)released;
    *(fm5_ring **)released = &header->ring;
}

static void collect_freed(void *released, void *user)
{
    fm5_large_header_of(user)->status = FM5_STATUS_LARGE | FM5_STATUS_FREE;
    collect_queued(released, user);
}

static void release_chain(fm5_ring *node)
{
    while (node) {
        fm5_ring *next = node->next;
        release_regions(FM5_CONTAINER_OF(node, fm5_large_header, ring));
        node = next;
    }
}

int fm5_large_process_pending_frees(int wait)
{
    int complete = 1;
    for (unsigned a = 0; a < FM5_LARGE_ARENA_COUNT; a++) {
        fm5_ring *released = NULL;
        complete &= fm5_arena_process_pending(&fm5_large_managers[a].gate, wait, collect_queued, &released);
        release_chain(released);
    }
    return complete;
}

/* The only pass: link the new block into the first arena whose lock is free. */
static void *link_pass(void *arena, void *context, int *final)
{
    (void)final;
    fm5_large_manager *manager = arena;
    fm5_large_header *header = context;
    if (!fm5_try_lock(&manager->gate.locked))
        return NULL;
    header->manager = manager;
    fm5_ring_insert_first(&manager->blocks, &header->ring);
    fm5_unlock(&manager->gate.locked);
    return (char *)header + FM5_LARGE_HEADER_SIZE;
}

void *fm5_large_get_mem(size_t user_size)
{
    if (user_size > SIZE_MAX - 2 * FM5_OS_GRANULARITY)
        return NULL;
    fm5_large_process_pending_frees(0);
    size_t size = region_size_for(user_size);
    fm5_large_header *header = fm5_memory_map(size, 0);
    if (!header)
        return NULL;
    if (!fm5_address_map_add(header, size, FM5_GRANULE_LARGE_BLOCK)) {
        fm5_memory_unmap(header, size, 1);
        return NULL;
    }
    header->block_size = size;
    header->user_size = user_size;
    header->segment_count = 1;
    header->status = FM5_STATUS_LARGE;
    return fm5_arena_allocate(fm5_large_managers, sizeof fm5_large_managers[0], FM5_LARGE_ARENA_COUNT, NULL,
                              link_pass, header, &fm5_large_contention_count);
}

/* Live: exactly "large", with or without debug information. Queued: marked pending. */
static const fm5_arena_status_rule large_status_rule = { (uint16_t)~FM5_STATUS_HAS_DEBUG_INFO, FM5_STATUS_LARGE,
                                                         FM5_STATUS_PENDING_FREE };

int fm5_large_free(void *user)
{
    fm5_large_header *header = fm5_large_header_of(user);
    fm5_ring *released = NULL;
    int result = fm5_arena_free(&header->manager->gate, user, &header->status, large_status_rule, collect_freed,
                                collect_queued, &released);
    /* The OS calls happen outside the lock. */
    release_chain(released);
    return result;
}

int fm5_large_resize_in_place(void *user, size_t new_user_size)
{
    fm5_large_header *header = fm5_large_header_of(user);
    size_t available = header->block_size - FM5_LARGE_HEADER_SIZE;
    if (new_user_size <= available) {
        if (new_user_size < available / 2)
            return 0;
        header->user_size = new_user_size;
        return 1;
    }
    if (new_user_size > SIZE_MAX - 2 * FM5_OS_GRANULARITY)
        return 0;
    char *end = (char *)header + header->block_size;
    /* Claim a quarter more than asked when the address space after the block is free, so that repeated
     * growth rarely moves; else just what was asked, if that much is free. */
    size_t needed = fm5_round_up(new_user_size - available, FM5_OS_GRANULARITY);
    size_t generous = available / 4 > new_user_size - available
                          ? fm5_round_up(available / 4, FM5_OS_GRANULARITY) : needed;
    size_t extra = generous;
    if (!fm5_memory_map_at(end, extra)) {
        extra = needed;
        if (extra == generous || !fm5_memory_map_at(end, extra))
            return 0;
    }
    if (!fm5_address_map_extend(end, extra)) {
        fm5_memory_unmap(end, extra, 1);
        return 0;
    }
    /* The walker reads these fields under the arena lock. */
    fm5_large_manager *manager = header->manager;
    fm5_lock_with_timeout(&manager->gate.locked, FM5_WAIT_FOREVER);
    header->block_size += extra;
    header->segment_count++;
    header->user_size = new_user_size;
    fm5_unlock(&manager->gate.locked);
    return 1;
}

int fm5_large_walk(fm5_walk_visitor visitor, void *context, uint32_t timeout_ms)
{
    int result = FM5_WALK_COMPLETE;
    for (unsigned a = 0; a < FM5_LARGE_ARENA_COUNT; a++) {
        fm5_large_manager *manager = &fm5_large_managers[a];
        if (!fm5_lock_with_timeout(&manager->gate.locked, timeout_ms)) {
            result = FM5_WALK_INCOMPLETE;
            continue;
        }
        for (fm5_ring *node = manager->blocks.next; node != &manager->blocks; node = node->next) {
            fm5_large_header *header = FM5_CONTAINER_OF(node, fm5_large_header, ring);
            FM5_ASSERT(header->manager == manager && node->next->prev == node);
            FM5_ASSERT(header->block_size % FM5_OS_GRANULARITY == 0 && header->segment_count >= 1);
            fm5_walk_item item = { (char *)header + FM5_LARGE_HEADER_SIZE, header->block_size,
                                   header->block_size - FM5_LARGE_HEADER_SIZE, FastMM_LargeBlock, a, 0, 0 };
            if (visitor(&item, context)) {
                fm5_unlock(&manager->gate.locked);
                return FM5_WALK_STOPPED;
            }
        }
        fm5_unlock(&manager->gate.locked);
    }
    return result;
}

void fm5_large_initialize(void)
{
    for (unsigned a = 0; a < FM5_LARGE_ARENA_COUNT; a++) {
        fm5_large_manager *manager = &fm5_large_managers[a];
        fm5_ring_init(&manager->blocks);
        manager->arena = a;
    }
}
