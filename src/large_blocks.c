/* Large blocks straight from VirtualAlloc. */
#include "large_blocks.h"
#include "block_status.h"
#include "os_memory.h"
#include "address_map.h"
#include "pending_free_list.h"
#include "block_walk.h"

fm5_large_manager fm5_large_managers[FM5_LARGE_ARENA_COUNT];
size_t fm5_large_contention_count;

static size_t region_size_for(size_t user_size)
{
    return fm5_round_up(user_size + FM5_LARGE_HEADER_SIZE, FM5_OS_GRANULARITY);
}

static void release_regions(fm5_large_header *header)
{
    size_t size = header->block_size;
    uint32_t segments = header->segment_count;
    fm5_address_map_remove(header, size);
    if (segments == 1) {
        fm5_os_release(header, size);
        return;
    }
    /* A block grown in place is several allocations; each must be released on its own. VirtualQuery
     * never reports a region that crosses the boundary between two allocations. */
    char *address = (char *)header;
    char *end = address + size;
    while (address < end) {
        MEMORY_BASIC_INFORMATION info;
        if (VirtualQuery(address, &info, sizeof info) != sizeof info)
            return;
        size_t region = info.RegionSize;
        fm5_os_release(address, region);
        address += region;
    }
}

static void unlink_block(fm5_large_header *header)
{
    header->prev->next = header->next;
    header->next->prev = header->prev;
}

static void drain_pending_locked(fm5_large_manager *manager, fm5_large_header **released)
{
    char *user = fm5_pending_take_all(&manager->pending_free_list);
    while (user) {
        char *next = *(char **)user;
        fm5_large_header *header = fm5_large_header_of(user);
        unlink_block(header);
        header->next = *released;
        *released = header;
        user = next;
    }
}

static void release_chain(fm5_large_header *header)
{
    while (header) {
        fm5_large_header *next = header->next;
        release_regions(header);
        header = next;
    }
}

int fm5_large_process_pending_frees(int wait)
{
    int complete = 1;
    for (unsigned a = 0; a < FM5_LARGE_ARENA_COUNT; a++) {
        fm5_large_manager *manager = &fm5_large_managers[a];
        if (!manager->pending_free_list)
            continue;
        if (wait ? fm5_lock_with_timeout(&manager->locked, INFINITE) : fm5_try_lock(&manager->locked)) {
            fm5_large_header *released = NULL;
            drain_pending_locked(manager, &released);
            fm5_unlock(&manager->locked);
            /* The OS call happens outside the lock. */
            release_chain(released);
        } else {
            complete = 0;
        }
    }
    return complete;
}

void *fm5_large_get_mem(size_t user_size)
{
    if (user_size > SIZE_MAX - 2 * FM5_OS_GRANULARITY)
        return NULL;
    fm5_large_process_pending_frees(0);
    size_t size = region_size_for(user_size);
    fm5_large_header *header = fm5_os_allocate(size, 0);
    if (!header)
        return NULL;
    if (!fm5_address_map_add(header, size, FM5_GRANULE_LARGE_BLOCK)) {
        fm5_os_release(header, size);
        return NULL;
    }
    header->block_size = size;
    header->user_size = user_size;
    header->segment_count = 1;
    header->status = FM5_STATUS_LARGE;
    for (;;) {
        for (unsigned a = 0; a < FM5_LARGE_ARENA_COUNT; a++) {
            fm5_large_manager *manager = &fm5_large_managers[a];
            if (!fm5_try_lock(&manager->locked))
                continue;
            fm5_large_header *ring = (fm5_large_header *)manager;
            header->manager = manager;
            header->next = ring->next;
            header->prev = ring;
            ring->next->prev = header;
            ring->next = header;
            fm5_unlock(&manager->locked);
            return (char *)header + FM5_LARGE_HEADER_SIZE;
        }
        fm5_large_contention_count++;
        SwitchToThread();
    }
}

int fm5_large_free(void *user)
{
    fm5_large_header *header = fm5_large_header_of(user);
    fm5_large_manager *manager = header->manager;
    if (fm5_try_lock(&manager->locked)) {
        if ((header->status & ~FM5_STATUS_HAS_DEBUG_INFO) != FM5_STATUS_LARGE) {
            fm5_unlock(&manager->locked);
            return -1;
        }
        header->status = FM5_STATUS_LARGE | FM5_STATUS_FREE;
        unlink_block(header);
        fm5_large_header *released = NULL;
        drain_pending_locked(manager, &released);
        fm5_unlock(&manager->locked);
        release_regions(header);
        release_chain(released);
        return 0;
    }
    uint16_t old = header->status;
    if ((old & ~FM5_STATUS_HAS_DEBUG_INFO) != FM5_STATUS_LARGE ||
        !fm5_cas_u16(&header->status, old, (uint16_t)(old | FM5_STATUS_PENDING_FREE)))
        return -1;
    fm5_pending_push(&manager->pending_free_list, user);
    return 0;
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
    size_t free_after = fm5_os_free_range_at(end);
    if (free_after < new_user_size - available)
        return 0;
    /* Claim a quarter more than asked when the range allows, so that repeated growth rarely moves. */
    size_t target = available + available / 4;
    if (target < new_user_size)
        target = new_user_size;
    size_t extra = fm5_round_up(target - available, FM5_OS_GRANULARITY);
    if (extra > free_after)
        extra = fm5_round_up(new_user_size - available, FM5_OS_GRANULARITY);
    if (!fm5_os_allocate_at(end, extra))
        return 0;
    if (!fm5_address_map_extend(end, extra)) {
        fm5_os_release(end, extra);
        return 0;
    }
    /* The walker reads these fields under the arena lock. */
    fm5_large_manager *manager = header->manager;
    fm5_lock_with_timeout(&manager->locked, INFINITE);
    header->block_size += extra;
    header->segment_count++;
    header->user_size = new_user_size;
    fm5_unlock(&manager->locked);
    return 1;
}

int fm5_large_walk(fm5_walk_visitor visitor, void *context, DWORD timeout_ms)
{
    int result = FM5_WALK_COMPLETE;
    for (unsigned a = 0; a < FM5_LARGE_ARENA_COUNT; a++) {
        fm5_large_manager *manager = &fm5_large_managers[a];
        if (!fm5_lock_with_timeout(&manager->locked, timeout_ms)) {
            result = FM5_WALK_INCOMPLETE;
            continue;
        }
        fm5_large_header *ring = (fm5_large_header *)manager;
        for (fm5_large_header *header = ring->next; header != ring; header = header->next) {
            fm5_walk_item item = { (char *)header + FM5_LARGE_HEADER_SIZE, header->block_size,
                                   header->block_size - FM5_LARGE_HEADER_SIZE, FastMM_LargeBlock, a, 0, 0 };
            if (visitor(&item, context)) {
                fm5_unlock(&manager->locked);
                return FM5_WALK_STOPPED;
            }
        }
        fm5_unlock(&manager->locked);
    }
    return result;
}

void fm5_large_initialize(void)
{
    for (unsigned a = 0; a < FM5_LARGE_ARENA_COUNT; a++) {
        fm5_large_manager *manager = &fm5_large_managers[a];
        manager->ring_next = manager->ring_prev = (fm5_large_header *)manager;
        manager->arena = a;
    }
}
