/* Large blocks, each its own OS mapping. */
#include "blocks/large_blocks.h"
#include "blocks/block_status.h"
#include "base/memory_usage.h"
#include "base/address_map.h"
#include "blocks/arena.h"
#include "blocks/walk.h"
#include "blocks/recycling.h"
#include "base/os.h"
#include "fm5.h"

fm5_large_manager fm5_large_managers[FM5_MAXIMUM_ARENA_COUNT];
size_t fm5_large_contention_count;
uint32_t fm5_large_arena_count;

static size_t region_size_for(size_t user_size)
{
    return fm5_round_up(user_size + FM5_LARGE_HEADER_SIZE, FM5_OS_GRANULARITY);
}

static void unmap_regions(fm5_large_header *header)
{
    size_t size = header->mapped_size;
    fm5_address_map_remove(header, size);
    /* A block grown in place is several mappings (segment_count); the OS layer releases each. */
    fm5_memory_unmap(header, size, header->segment_count);
}

/* ---- the cache of freed regions (large_blocks.h) ----------------------------------------------
 * Guarded by cache_lock, which is taken with no other lock held and holds none; the OS calls happen
 * outside it. surplus_bytes, the surplus of live blocks on regions of more than twice their request,
 * grows under the lock (where it is checked against the limit) and shrinks without it, atomically:
 * a shrink only makes room, so the bound holds. */
typedef struct cache_entry {
    fm5_large_header *header;
    uint32_t cached_at_ms;
} cache_entry;

static fm5_lock cache_lock;
static cache_entry cache[FM5_LARGE_CACHE_ENTRIES];
static unsigned cache_count;
static size_t cache_bytes;
static size_t cache_limit = FM5_LARGE_CACHE_DEFAULT_BYTES;
static size_t surplus_bytes;

static void lock_cache(void)
{
    fm5_lock_with_timeout(&cache_lock, FM5_WAIT_FOREVER);
}

/* cache_count and cache_bytes are written under the lock and read without it as hints (the lock-free
 * "is the cache empty?" tests, fm5_large_cache_bytes): whole relaxed stores. */
static void remove_entry(unsigned i)
{
    __atomic_store_n(&cache_bytes, cache_bytes - cache[i].header->mapped_size, __ATOMIC_RELAXED);
    for (unsigned j = i + 1; j < cache_count; j++)
        cache[j - 1] = cache[j];
    __atomic_store_n(&cache_count, cache_count - 1, __ATOMIC_RELAXED);
}

/* Takes out of the cache, under its lock, the regions that `all`, age or the limit say must go, and
 * chains them (through ring.next) for unmapping after the unlock. */
static fm5_ring *take_expired_locked(int all, uint32_t now)
{
    fm5_ring *chain = NULL;
    for (unsigned i = cache_count; i-- > 0;) {
        if (all || now - cache[i].cached_at_ms > FM5_LARGE_CACHE_AGE_MS || cache_bytes > __atomic_load_n(&cache_limit, __ATOMIC_RELAXED)) {
            fm5_large_header *header = cache[i].header;
            remove_entry(i);
            header->ring.next = chain;
            chain = &header->ring;
        }
    }
    return chain;
}

static void unmap_chain(fm5_ring *node)
{
    while (node) {
        fm5_ring *next = node->next;
        unmap_regions(FM5_CONTAINER_OF(node, fm5_large_header, ring));
        node = next;
    }
}

static void release_expired(int all)
{
    if (!all && !__atomic_load_n(&cache_count, __ATOMIC_RELAXED))
        return;
    uint32_t now = fm5_os_tick_ms();
    lock_cache();
    fm5_ring *chain = take_expired_locked(all, now);
    fm5_unlock(&cache_lock);
    unmap_chain(chain);
}

void fm5_large_cache_release_all(void)
{
    release_expired(1);
}

size_t fm5_large_cache_bytes(void)
{
    return __atomic_load_n(&cache_bytes, __ATOMIC_RELAXED);
}

size_t FM5_CALL FastMM_GetLargeBlockCacheLimit(void)
{
    return __atomic_load_n(&cache_limit, __ATOMIC_RELAXED);
}

void FM5_CALL FastMM_SetLargeBlockCacheLimit(size_t bytes)
{
    __atomic_store_n(&cache_limit, bytes, __ATOMIC_RELAXED);
    release_expired(0);
}

/* Keeps a freed region of one mapping, if the bounds allow; 1 when it did (the caller then leaves it
 * mapped). When all entries are taken or the bytes would pass the limit, the smallest regions give
 * way, this one among them: a large region serves more requests than a small one. */
static int cache_put(fm5_large_header *header)
{
    size_t size = header->mapped_size;
    size_t limit = __atomic_load_n(&cache_limit, __ATOMIC_RELAXED);
    if (header->segment_count != 1 || size > limit || !fm5_recycling_caches_large_regions())
        return 0;
    uint32_t now = fm5_os_tick_ms();
    fm5_ring *chain = NULL;
    int kept = 1;
    lock_cache();
    while (cache_count && (cache_count == FM5_LARGE_CACHE_ENTRIES || cache_bytes + size > limit)) {
        unsigned smallest = 0;
        for (unsigned i = 1; i < cache_count; i++)
            if (cache[i].header->mapped_size < cache[smallest].header->mapped_size)
                smallest = i;
        if (cache[smallest].header->mapped_size < size) {
            fm5_large_header *old = cache[smallest].header;
            remove_entry(smallest);
            old->ring.next = chain;
            chain = &old->ring;
        } else {
            kept = 0;  /* this one is the smallest */
            break;
        }
    }
    if (kept) {
        cache[cache_count].header = header;
        cache[cache_count].cached_at_ms = now;
        __atomic_store_n(&cache_count, cache_count + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&cache_bytes, cache_bytes + size, __ATOMIC_RELAXED);
    }
    fm5_unlock(&cache_lock);
    unmap_chain(chain);
    return kept;
}

/* The smallest cached region of at least `size` bytes, or NULL; one of more than twice `size` only
 * while the surplus it adds keeps surplus_bytes within the limit (large_blocks.h). Without that
 * freedom, buffers of 1-10 MiB freed and allocated in turn (large_loop_varied) found no region a
 * quarter of the time and faulted in 258 fresh pages a step (a simulation of the workload; 5 with
 * it). The region's surplus is recorded in its header and counted here until the block is freed. */
static fm5_large_header *cache_take(size_t size)
{
    if (!__atomic_load_n(&cache_count, __ATOMIC_RELAXED))
        return NULL;
    fm5_large_header *found = NULL;
    lock_cache();
    unsigned best = cache_count;
    for (unsigned i = 0; i < cache_count; i++) {
        size_t have = cache[i].header->mapped_size;
        if (have >= size && (best == cache_count || have < cache[best].header->mapped_size))
            best = i;
    }
    if (best < cache_count) {
        size_t surplus = cache[best].header->mapped_size - size;
        if (surplus > size) {
            size_t held = __atomic_load_n(&surplus_bytes, __ATOMIC_RELAXED);
            if (held + surplus > __atomic_load_n(&cache_limit, __ATOMIC_RELAXED))
                best = cache_count;
            else
                __atomic_fetch_add(&surplus_bytes, surplus, __ATOMIC_RELAXED);
        } else {
            surplus = 0;
        }
        if (best < cache_count) {
            found = cache[best].header;
            remove_entry(best);
            found->surplus_granules = (uint32_t)(surplus / FM5_OS_GRANULARITY);
        }
    }
    fm5_unlock(&cache_lock);
    return found;
}

static void release_regions(fm5_large_header *header)
{
    if (header->surplus_granules) {
        __atomic_fetch_sub(&surplus_bytes, (size_t)header->surplus_granules * FM5_OS_GRANULARITY, __ATOMIC_RELAXED);
        header->surplus_granules = 0;
    }
    if (!cache_put(header))
        unmap_regions(header);
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
    for (unsigned a = 0; a < fm5_large_arena_count; a++) {
        fm5_ring *released = NULL;
        complete &= fm5_arena_process_pending(&fm5_large_managers[a].gate, wait, collect_queued, &released);
        release_chain(released);
    }
    release_expired(0);
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
    fm5_large_header *header = cache_take(size);
    if (header) {
        /* Still mapped and in the address map, marked free: only the header changes. */
        header->recycled = 1;
    } else {
        /* What the cache holds counts against the usage limit: it gives way first. */
        size_t limit = fm5_memory_limit();
        if (limit && __atomic_load_n(&cache_count, __ATOMIC_RELAXED) && fm5_memory_usage() + size > limit)
            fm5_large_cache_release_all();
        header = fm5_memory_map(size, 0);
        if (!header && __atomic_load_n(&cache_count, __ATOMIC_RELAXED)) {
            /* The cache may hold what the OS or the usage limit now refuses. */
            fm5_large_cache_release_all();
            header = fm5_memory_map(size, 0);
        }
        if (!header)
            return NULL;
        if (!fm5_address_map_add(header, size, FM5_GRANULE_LARGE_BLOCK)) {
            fm5_memory_unmap(header, size, 1);
            return NULL;
        }
        header->mapped_size = size;
        header->surplus_granules = 0;
        header->recycled = 0;
    }
    /* A cached region may be larger: the block is what was asked (rounded to granules), the rest
     * slack that in-place growth uses first. */
    header->block_size = size;
    header->user_size = user_size;
    header->segment_count = 1;
    header->status = FM5_STATUS_LARGE;
    return fm5_arena_allocate(fm5_large_managers, sizeof fm5_large_managers[0], fm5_large_arena_count, 0, NULL,
                              link_pass, NULL, header, &fm5_large_contention_count);
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
    release_expired(0);
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
    fm5_large_manager *manager = header->manager;
    size_t mapped_available = header->mapped_size - FM5_LARGE_HEADER_SIZE;
    if (new_user_size <= mapped_available) {
        /* Within a cached region's slack: no OS call. */
        fm5_lock_with_timeout(&manager->gate.locked, FM5_WAIT_FOREVER);
        header->block_size = region_size_for(new_user_size);
        header->user_size = new_user_size;
        fm5_unlock(&manager->gate.locked);
        return 1;
    }
    available = mapped_available;
    char *end = (char *)header + header->mapped_size;
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
    fm5_lock_with_timeout(&manager->gate.locked, FM5_WAIT_FOREVER);
    header->mapped_size += extra;
    header->block_size = header->mapped_size;
    header->segment_count++;
    header->user_size = new_user_size;
    fm5_unlock(&manager->gate.locked);
    return 1;
}

int fm5_large_walk(fm5_walk_visitor visitor, void *context, uint32_t timeout_ms)
{
    int result = FM5_WALK_COMPLETE;
    for (unsigned a = 0; a < fm5_large_arena_count; a++) {
        fm5_large_manager *manager = &fm5_large_managers[a];
        if (!fm5_lock_with_timeout(&manager->gate.locked, timeout_ms)) {
            result = FM5_WALK_INCOMPLETE;
            continue;
        }
        /* Blocks freed while another thread held the lock are free: taken out before the walk sees
         * them (and given back to the OS after the lock), so that it never reports them in use. */
        fm5_ring *released = NULL;
        fm5_arena_drain(&manager->gate, collect_queued, &released);
        for (fm5_ring *node = manager->blocks.next; node != &manager->blocks; node = node->next) {
            fm5_large_header *header = FM5_CONTAINER_OF(node, fm5_large_header, ring);
            FM5_ASSERT(header->manager == manager && node->next->prev == node);
            FM5_ASSERT(header->block_size % FM5_OS_GRANULARITY == 0 && header->segment_count >= 1);
            FM5_ASSERT(header->mapped_size >= header->block_size && header->mapped_size % FM5_OS_GRANULARITY == 0);
            fm5_walk_item item = { (char *)header + FM5_LARGE_HEADER_SIZE, header->block_size,
                                   header->block_size - FM5_LARGE_HEADER_SIZE, FastMM_LargeBlock, a, 0, 0 };
            /* A recycled region's slack beyond the block: mapped, unused (the heap status counts it). */
            fm5_walk_item slack = { (char *)header + header->block_size, header->mapped_size - header->block_size, 0,
                                    FastMM_LargeBlock, a, 1, 1 };
            if (visitor(&item, context) || (slack.block_size && visitor(&slack, context))) {
                fm5_unlock(&manager->gate.locked);
                release_chain(released);
                return FM5_WALK_STOPPED;
            }
        }
        fm5_unlock(&manager->gate.locked);
        release_chain(released);
    }
    return result;
}

/* An arena is prepared when the arena count first reaches it. */
static unsigned prepared_arenas;

void fm5_large_set_arena_count(unsigned count)
{
    FM5_ASSERT(count >= 1 && count <= FM5_MAXIMUM_ARENA_COUNT);
    for (; prepared_arenas < count; prepared_arenas++) {
        fm5_large_manager *manager = &fm5_large_managers[prepared_arenas];
        fm5_ring_init(&manager->blocks);
        manager->arena = prepared_arenas;
    }
    fm5_large_arena_count = count;
}

void fm5_large_initialize(void)
{
    fm5_large_set_arena_count(FM5_DEFAULT_LARGE_ARENA_COUNT);
}
