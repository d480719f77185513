/* Per-thread small-block caches: the records, their epochs, filling and flushing (thread_cache.h).
 *
 * Lock order: record_lock is taken with no manager lock held, and the flush of an ended thread's cache
 * takes small-manager locks under it (record_lock -> small -> medium). */
#include "blocks/thread_cache.h"
#include "blocks/small_block_classes.h"
#include "blocks/strategy.h"

volatile uint32_t fm5_thread_cache_epoch;
uint16_t fm5_thread_cache_bin_limit[FM5_SMALL_CLASS_COUNT];
uint16_t fm5_thread_cache_grown_limit[FM5_SMALL_CLASS_COUNT];

/* Guards the record list, the pool, every record's state and the off reasons. */
static fm5_lock record_lock;
static fm5_thread_cache *all_records;
static char *pool;
static size_t pool_left;
static uint32_t off_reasons = FM5_CACHE_OFF_NO_THREAD_SLOT;

/* What a thread's slot holds after its exit call: frees made later in its exit (other modules'
 * thread detach) go straight to the managers, and no new record is made for it. Its epoch, 0, is
 * never a usable one. */
static fm5_thread_cache retired_record = { .state = FM5_CACHE_RETIRED };

/* ---- flushing ----------------------------------------------------------------------------------- */

/* Slot `slot`'s medium block, if any, back to its manager. */
static void release_medium_slot(fm5_thread_cache *cache, unsigned slot)
{
    uint32_t size = cache->medium_size[slot];
    if (!size)
        return;
    cache->medium_size[slot] = 0;
    __atomic_store_n(&cache->medium_byte_room, cache->medium_byte_room + size, __ATOMIC_RELAXED);
    fm5_medium_release_cached(cache->medium[slot]);
}

static void release_medium_slots(fm5_thread_cache *cache)
{
    for (unsigned i = 0; i < FM5_THREAD_CACHE_MEDIUM_SLOTS; i++)
        release_medium_slot(cache, i);
}

static void flush_record(fm5_thread_cache *cache)
{
    release_medium_slots(cache);
    cache->medium_next = 0;
    for (unsigned s = 0; s < FM5_SMALL_CLASS_COUNT; s++) {
        fm5_thread_cache_bin *bin = &cache->bins[s];
        void *chain = bin->first;
        bin->first = NULL;
        fm5_thread_cache_bin_store(&bin->limit, fm5_thread_cache_bin_limit[s]);
        fm5_thread_cache_bin_store(&bin->room, fm5_thread_cache_bin_limit[s]);
        if (chain)
            fm5_small_release_cached(chain);
    }
    cache->trimmed = 0;
    cache->grown_bytes = 0;
}

/* A full bin gives back all but its oldest `keep` blocks, in one batch. The newest go, just freed,
 * and the release itself finds the cut (one pass over them): keeping them instead walked `keep`
 * other links first, and released blocks freed longer ago. Measured against keeping
 * them (11-21 pairs at scale 0.1 on the 2-core Xeon, 2026-12-05): raw_perf_1, a ring of mixed sizes
 * where bins fill and trim in turn, +14.1 % [+12.0, +20.3] Win32 and +1.7 % [-1.4, +6.8] Win64; the
 * single-threaded FastCode rows within their noise (verysmall_downsize -4.1 % [-8.1, +1.3] Win32,
 * -4.3 % [-9.1, +4.3] Win64). */
static void trim_bin(fm5_thread_cache *cache, unsigned slot, unsigned keep)
{
    fm5_thread_cache_bin *bin = &cache->bins[slot];
    unsigned held = (unsigned)bin->limit - bin->room;
    if (held <= keep)
        return;
    bin->first = fm5_small_release_cached_first(bin->first, held - keep);
    fm5_thread_cache_bin_store(&bin->room, bin->room + held - keep);
}

/* At the fill of an empty bin that gave blocks back since its last fill: its limit doubles, within
 * the class's grown limit and the thread's growth bytes. */
static void grow_bin(fm5_thread_cache *cache, unsigned slot)
{
    fm5_thread_cache_bin *bin = &cache->bins[slot];
    unsigned limit = 2u * bin->limit;
    if (limit > fm5_thread_cache_grown_limit[slot])
        limit = fm5_thread_cache_grown_limit[slot];
    unsigned affordable = (FM5_THREAD_CACHE_GROWTH_BYTES - cache->grown_bytes) / bin->block_size;
    if (limit > bin->limit + affordable)
        limit = bin->limit + affordable;
    cache->grown_bytes += (limit - bin->limit) * bin->block_size;
    fm5_thread_cache_bin_store(&bin->room, bin->room + limit - bin->limit);
    fm5_thread_cache_bin_store(&bin->limit, limit);
    FM5_ASSERT(bin->room <= bin->limit && cache->grown_bytes <= FM5_THREAD_CACHE_GROWTH_BYTES);
}

/* ---- records ------------------------------------------------------------------------------------ */

/* Under record_lock: an unused record, or a new one from the pool (fm5_os_map: outside the usage
 * counter, as the managers' own tables are). */
static fm5_thread_cache *take_record_locked(void)
{
    for (fm5_thread_cache *cache = all_records; cache; cache = cache->next)
        if (cache->state == FM5_CACHE_UNUSED)
            return cache;
    if (pool_left < sizeof(fm5_thread_cache)) {
        pool = fm5_os_map(FM5_OS_GRANULARITY, 0);
        if (!pool)
            return NULL;
        pool_left = FM5_OS_GRANULARITY;
    }
    fm5_thread_cache *cache = (fm5_thread_cache *)pool;
    pool += sizeof(fm5_thread_cache);
    pool_left -= sizeof(fm5_thread_cache);
    cache->next = all_records;
    all_records = cache;
    return cache;
}

static fm5_thread_cache *adopt_record(void)
{
    fm5_lock_with_timeout(&record_lock, FM5_WAIT_FOREVER);
    fm5_thread_cache *cache = take_record_locked();
    if (cache)
        cache->state = FM5_CACHE_LIVE;
    fm5_unlock(&record_lock);
    if (!cache)
        return NULL;
    for (unsigned s = 0; s < FM5_SMALL_CLASS_COUNT; s++) {
        FM5_ASSERT(cache->bins[s].first == NULL);
        fm5_thread_cache_bin_store(&cache->bins[s].limit, fm5_thread_cache_bin_limit[s]);
        fm5_thread_cache_bin_store(&cache->bins[s].room, fm5_thread_cache_bin_limit[s]);
        cache->bins[s].zero = 0;
        fm5_thread_cache_bin_store(&cache->bins[s].block_size,
                                   fm5_thread_cache_bin_limit[s] ? fm5_small_managers[0][s].block_size : 0u);
    }
    for (unsigned i = 0; i < FM5_THREAD_CACHE_MEDIUM_SLOTS; i++) {
        FM5_ASSERT(cache->medium_size[i] == 0);
        cache->medium_wanted[i] = 0;
    }
    __atomic_store_n(&cache->medium_byte_room, FM5_THREAD_CACHE_MEDIUM_BYTES, __ATOMIC_RELAXED);
    cache->medium_next = 0;
    cache->medium_wanted_next = 0;
    cache->epoch = 0;
    cache->filled = 0;
    cache->trimmed = 0;
    cache->grown_bytes = 0;
    cache->thread_handle = fm5_os_thread_handle_open();
    fm5_claims_adopt(&cache->claimer, cache->thread_handle);
    fm5_os_thread_slot_set(cache, 1);
    return cache;
}

static void give_up_record(fm5_thread_cache *cache)
{
    fm5_claims_give_up(&cache->claimer);
    fm5_os_thread_handle_close(cache->thread_handle);
    cache->thread_handle = 0;
    fm5_lock_with_timeout(&record_lock, FM5_WAIT_FOREVER);
    cache->state = FM5_CACHE_UNUSED;
    fm5_unlock(&record_lock);
}

/* The thread's exit call (base/os.h): in the exiting thread. */
static void at_thread_exit(void *value)
{
    fm5_thread_cache *cache = value;
    if (cache == &retired_record)
        return;
    fm5_os_thread_slot_set(&retired_record, 0);
    flush_record(cache);
    give_up_record(cache);
}

void fm5_thread_cache_flush_ended_threads(void)
{
    fm5_lock_with_timeout(&record_lock, FM5_WAIT_FOREVER);
    for (fm5_thread_cache *cache = all_records; cache; cache = cache->next) {
        /* Its owner is gone: nobody else touches the record. */
        if (cache->state == FM5_CACHE_LIVE && fm5_os_thread_has_ended(cache->thread_handle)) {
            flush_record(cache);
            fm5_claims_give_up(&cache->claimer);
            fm5_os_thread_handle_close(cache->thread_handle);
            cache->thread_handle = 0;
            cache->state = FM5_CACHE_UNUSED;
        }
    }
    fm5_unlock(&record_lock);
}

/* The running thread's cache brought up to date: flushed when its epoch is stale, made when missing
 * and caches are on. NULL when caches are off (or no record could be had). */
static fm5_thread_cache *settled_cache(void)
{
    uint32_t epoch = __atomic_load_n(&fm5_thread_cache_epoch, __ATOMIC_RELAXED);
    fm5_thread_cache *cache = fm5_os_thread_slot_get();
    if (cache == &retired_record)
        return NULL;
    if (cache && cache->epoch != epoch) {
        flush_record(cache);
        /* A request made during the flush moved the epoch on again: the next call flushes again. */
        cache->epoch = epoch;
    }
    if (!(epoch & 1))
        return NULL;
    if (!cache) {
        cache = adopt_record();
        if (!cache)
            return NULL;
        cache->epoch = epoch;
    }
    return cache;
}

/* ---- the slow paths ----------------------------------------------------------------------------- */

#if FM5_CHECKED
/* The blocks on a chain linked through their first word (the checked build's count of a fill). */
static unsigned chain_length(const void *chain)
{
    unsigned n = 0;
    for (; chain; chain = *(void *const *)chain)
        n++;
    return n;
}
#endif

/* How far into a fill to look for a block whose lines no live block shares. */
#define QUIET_SEARCH 8

/* Makes *user a block with quiet lines (fm5_small_lines_are_quiet) if one of the first `depth` blocks
 * of *rest is: the two change places. Returns 0 when none is. */
static int pick_quiet(void **user, void **rest, unsigned depth)
{
    if (fm5_small_lines_are_quiet(*user))
        return 1;
    void **link = rest;
    for (unsigned n = 0; n < depth && *link; n++, link = (void **)*link) {
        void *candidate = *link;
        if (fm5_small_lines_are_quiet(candidate)) {
            *link = *(void **)candidate;
            *(void **)*user = *link;
            *link = *user;
            fm5_status_store(*user, fm5_status_load(*user) | FM5_STATUS_FREE);
            fm5_status_store(candidate, fm5_status_load(candidate) & ~FM5_STATUS_FREE);
            *user = candidate;
            return 1;
        }
    }
    return 0;
}

/* The fill's first block shares a line with a live block (of another thread, as likely as not: a
 * block reused from a span's free chain next to blocks still in use): the thread would write next
 * to it for as long as it keeps the block (false sharing, cache_scratch's case). On the bin's first
 * fill only, one of the next few blocks of the fill that has quiet lines is handed out instead, or,
 * failing that, the lowest of a few fresh blocks from the sequential feed (unfed blocks below it, the
 * thread's own above), a line's worth and one more. Later fills keep what they found: a thread that
 * has blocks of its own in the class frees and reuses those; fresh blocks at every fill that met live
 * neighbours grew the heap (larson's commit doubled, raw_perf_8 lost 30 %), and the line test at
 * every fill cost glibc_simple 17 %. The reused blocks stay cached but the first, which goes back to
 * its span; the caller trims the chain to the bin's room. */
static void *quiet_block_of_fill(unsigned class_slot, void *user, void **rest, unsigned *rest_count)
{
    if (pick_quiet(&user, rest, QUIET_SEARCH))
        return user;
    unsigned fresh_want = FM5_CACHE_LINE / fm5_small_managers[0][class_slot].block_size + 2;
    void *fresh_rest;
    unsigned fresh_count;
    void *fresh = fm5_small_get_batch(class_slot, fresh_want, &fresh_rest, &fresh_count, 1);
    if (!fresh)
        return user;
    fm5_status_store(user, fm5_status_load(user) | FM5_STATUS_FREE);
    *(void **)user = NULL;
    fm5_small_release_cached(user);
    pick_quiet(&fresh, &fresh_rest, fresh_want);
    if (fresh_rest) {
        void **tail = &fresh_rest;
        while (*tail)
            tail = (void **)*tail;
        *tail = *rest;
        *rest = fresh_rest;
        *rest_count += fresh_count;
    }
    return fresh;
}

void *fm5_thread_cache_get_mem_slow(unsigned class_slot, size_t size)
{
    fm5_thread_cache *cache = settled_cache();
    if (!cache)
        return fm5_small_get_mem(size);
    fm5_thread_cache_bin *bin = &cache->bins[class_slot];
    if (bin->first)
        return fm5_thread_cache_get_mem(size);
    if (!bin->block_size)
        return fm5_small_get_mem(size);
    uint64_t bit = (uint64_t)1 << class_slot;
    if (cache->trimmed & bit) {
        cache->trimmed &= ~bit;
        grow_bin(cache, class_slot);
    }
    /* Half the bin's limit: the next GetMem calls of the class, and room left for the frees that
     * follow them. */
    unsigned want = 1 + bin->limit / 2u;
    if (want > bin->room)
        want = bin->room;
    void *rest;
    unsigned cached;
    void *user = fm5_small_get_batch(class_slot, want, &rest, &cached, 0);
    if (user && !(cache->filled & bit) && !fm5_small_lines_are_quiet(user))
        user = quiet_block_of_fill(class_slot, user, &rest, &cached);
    cache->filled |= bit;
#if FM5_CHECKED
    FM5_ASSERT(chain_length(rest) == cached);
#endif
    /* Counted, not walked: blocks fed from a span's end were linked by stores alone, and a walk here
     * waited for each of their lines in turn. Only a fill that the quiet block's fresh blocks made
     * longer than the bin's room is cut (walked to the cut). */
    if (cached > bin->room) {
        void **link = &rest;
        for (unsigned n = 0; n < bin->room; n++)
            link = (void **)*link;
        fm5_small_release_cached(*link);
        *link = NULL;
        cached = bin->room;
    }
    bin->first = rest;
    fm5_thread_cache_bin_store(&bin->room, bin->room - cached);
    return user;
}

int fm5_thread_cache_free_slow(void *user, fm5_small_span *span)
{
    fm5_thread_cache *cache = settled_cache();
    if (!cache)
        return fm5_small_free(user, span);
    /* The claim first: until it succeeds the block may be another free's, which can empty and release
     * the span (its header with it), and nothing of the span but what FreeMem read is trusted. */
    uint16_t status = (uint16_t)fm5_status_load(user);
    if (status & FM5_STATUS_HAS_DEBUG_INFO)
        return fm5_small_free(user, span);
    if (!fm5_thread_cache_claim(cache, user, status))
        return -1;
    unsigned slot = span->class_slot;
    fm5_thread_cache_bin *bin = &cache->bins[slot];
    if (!bin->block_size || fm5_thread_cache_span_is_sparse(span)) {
        fm5_small_release_claimed(user, span);
        return 0;
    }
    if (bin->room == 0) {
        cache->trimmed |= (uint64_t)1 << slot;
        trim_bin(cache, slot, bin->limit / 2u);
    }
    /* An empty bin that was never filled hands this block out as the thread's first of the class: not
     * if a live block may share its lines (false sharing: cache_scratch's case, a block handed over by
     * the thread that allocated it next to one it keeps). */
    if (bin->room == bin->limit && !(cache->filled & ((uint64_t)1 << slot)) && !fm5_small_lines_are_quiet(user)) {
        fm5_small_release_claimed(user, span);
        return 0;
    }
    fm5_thread_cache_link(bin, user);
    return 0;
}

static int medium_size_is_wanted(const fm5_thread_cache *cache, uint32_t size)
{
    int wanted = 0;
    for (unsigned i = 0; i < FM5_THREAD_CACHE_MEDIUM_SLOTS; i++)
        wanted |= cache->medium_wanted[i] == size;
    return wanted && size <= FM5_THREAD_CACHE_MEDIUM_BYTES;
}

void *fm5_thread_cache_get_medium_slow(size_t size, int *zeroed)
{
    fm5_thread_cache *cache = settled_cache();
    if (cache) {
        /* The managers see every free block before they carve or map more (thread_cache.h). */
        if (cache->medium_byte_room != FM5_THREAD_CACHE_MEDIUM_BYTES)
            release_medium_slots(cache);
        cache->medium_wanted[cache->medium_wanted_next++ % FM5_THREAD_CACHE_MEDIUM_SLOTS] = (uint32_t)size;
    }
    return fm5_medium_allocate_noting_zero(size, zeroed);
}

void fm5_thread_cache_give_back_medium(void *user)
{
    fm5_thread_cache *cache = fm5_thread_cache_usable();
    if (!cache)
        return;
    for (unsigned i = 0; i < FM5_THREAD_CACHE_MEDIUM_SLOTS; i++)
        if (cache->medium_size[i] && cache->medium[i] == user)
            release_medium_slot(cache, i);
}

int fm5_thread_cache_free_medium(void *user)
{
    fm5_thread_cache *cache = settled_cache();
    /* The low-memory strategy keeps nothing it need not. */
    if (!cache || fm5_optimization_strategy == FastMM_OptimizeForLowMemoryUsage)
        return fm5_medium_free(user);
    /* The claim first: until it succeeds the block may be another free's, which can merge it (its
     * size changes) or release its span. */
    if (!fm5_medium_claim_for_cache(user, &cache->claimer))
        return -1;
    uint32_t size = (uint32_t)fm5_medium_block_size(user);
    if (!medium_size_is_wanted(cache, size)) {
        fm5_medium_release_cached(user);
        return 0;
    }
    /* An empty slot, else the one whose turn it is (taken in turn, the oldest block's); then as many
     * of the next ones in turn as the bytes need. Ends: with every slot empty, the room is whole. */
    unsigned slot = 0;
    while (slot < FM5_THREAD_CACHE_MEDIUM_SLOTS && cache->medium_size[slot])
        slot++;
    if (slot == FM5_THREAD_CACHE_MEDIUM_SLOTS) {
        slot = cache->medium_next;
        cache->medium_next = (slot + 1) % FM5_THREAD_CACHE_MEDIUM_SLOTS;
        release_medium_slot(cache, slot);
    }
    for (unsigned older = cache->medium_next; cache->medium_byte_room < size; older++)
        release_medium_slot(cache, older % FM5_THREAD_CACHE_MEDIUM_SLOTS);
    cache->medium[slot] = user;
    cache->medium_size[slot] = size;
    __atomic_store_n(&cache->medium_byte_room, cache->medium_byte_room - size, __ATOMIC_RELAXED);
    return 0;
}

/* ---- settings and requests ---------------------------------------------------------------------- */

/* Under record_lock: the epoch's parity follows the reasons; a concurrent flush request (+2) is kept. */
static void update_epoch_locked(void)
{
    uint32_t want_odd = off_reasons == 0;
    for (;;) {
        uint32_t epoch = __atomic_load_n(&fm5_thread_cache_epoch, __ATOMIC_RELAXED);
        if ((epoch & 1) == want_odd ||
            __atomic_compare_exchange_n(&fm5_thread_cache_epoch, &epoch, epoch + 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return;
    }
}

void fm5_thread_cache_hold(unsigned reason, int held)
{
    fm5_lock_with_timeout(&record_lock, FM5_WAIT_FOREVER);
    off_reasons = held ? off_reasons | reason : off_reasons & ~reason;
    update_epoch_locked();
    fm5_unlock(&record_lock);
}

int fm5_thread_cache_set_enabled(int enabled)
{
    int previous = fm5_thread_cache_enabled();
    fm5_thread_cache_hold(FM5_CACHE_OFF_BY_SETTING, !enabled);
    if (!enabled)
        fm5_thread_cache_flush_current();
    return previous;
}

int fm5_thread_cache_enabled(void)
{
    return !(__atomic_load_n(&off_reasons, __ATOMIC_RELAXED) & FM5_CACHE_OFF_BY_SETTING);
}

void fm5_thread_cache_request_flush(void)
{
    __atomic_add_fetch(&fm5_thread_cache_epoch, 2, __ATOMIC_ACQ_REL);
}

void fm5_thread_cache_flush_current(void)
{
    fm5_thread_cache *cache = fm5_os_thread_slot_get();
    if (cache && cache != &retired_record) {
        flush_record(cache);
        /* Stale on purpose, so that the next call settles it against the epoch of that moment. */
        cache->epoch = 0;
    }
}

/* The bytes of small blocks in a cache, from its bins: a snapshot, read while the owner keeps
 * changing them (a room read beside an older limit counts nothing for that bin). */
static size_t small_bytes_held(fm5_thread_cache *cache)
{
    size_t bytes = 0;
    for (unsigned s = 0; s < FM5_SMALL_CLASS_COUNT; s++) {
        const fm5_thread_cache_bin *bin = &cache->bins[s];
        unsigned limit = __atomic_load_n(&bin->limit, __ATOMIC_RELAXED);
        unsigned room = __atomic_load_n(&bin->room, __ATOMIC_RELAXED);
        if (room < limit)
            bytes += (size_t)(limit - room) * __atomic_load_n(&bin->block_size, __ATOMIC_RELAXED);
    }
    return bytes;
}

size_t fm5_thread_cache_bytes(unsigned *caches)
{
    size_t bytes = 0;
    unsigned live = 0;
    fm5_lock_with_timeout(&record_lock, FM5_WAIT_FOREVER);
    for (fm5_thread_cache *cache = all_records; cache; cache = cache->next) {
        if (cache->state != FM5_CACHE_LIVE)
            continue;
        live++;
        bytes += small_bytes_held(cache);
        bytes += FM5_THREAD_CACHE_MEDIUM_BYTES - __atomic_load_n(&cache->medium_byte_room, __ATOMIC_RELAXED);
    }
    fm5_unlock(&record_lock);
    if (caches)
        *caches = live;
    return bytes;
}

void fm5_thread_cache_initialize(void)
{
    size_t start_bytes = 0;
    for (unsigned s = 0; s < FM5_SMALL_CLASS_COUNT; s++) {
        unsigned block_size = fm5_small_managers[0][s].block_size;
        unsigned blocks = FM5_THREAD_CACHE_BIN_BYTES / block_size;
        if (blocks < FM5_THREAD_CACHE_BIN_MINIMUM_BLOCKS)
            blocks = FM5_THREAD_CACHE_BIN_MINIMUM_BLOCKS;
        if (blocks > FM5_THREAD_CACHE_BIN_MAXIMUM_BLOCKS)
            blocks = FM5_THREAD_CACHE_BIN_MAXIMUM_BLOCKS;
        unsigned grown = FM5_THREAD_CACHE_BIN_GROWN_BYTES / block_size;
        if (grown > FM5_THREAD_CACHE_BIN_GROWN_BLOCKS)
            grown = FM5_THREAD_CACHE_BIN_GROWN_BLOCKS;
        if (grown < blocks)
            grown = blocks;
        if (block_size > FM5_THREAD_CACHE_MAXIMUM_BLOCK_SIZE)
            blocks = grown = 0;
        fm5_thread_cache_bin_limit[s] = (uint16_t)blocks;
        fm5_thread_cache_grown_limit[s] = (uint16_t)grown;
        start_bytes += (size_t)blocks * block_size;
    }
    /* The byte bound must not bind before the bins' limits do (thread_cache.h). */
    FM5_ASSERT(start_bytes + FM5_THREAD_CACHE_GROWTH_BYTES <= FM5_THREAD_CACHE_BYTES);
    (void)start_bytes;
    int have_slot = fm5_os_thread_slot_create(at_thread_exit) >= 0;
    fm5_lock_with_timeout(&record_lock, FM5_WAIT_FOREVER);
    /* The modes' reasons stay: a mode switched on before this start-up still holds the caches off. */
    const unsigned modes = FM5_CACHE_OFF_IN_DEBUG_MODE | FM5_CACHE_OFF_IN_ERASE_MODE | FM5_CACHE_OFF_SHARED_MANAGER;
    off_reasons = (off_reasons & modes) | (have_slot ? 0 : FM5_CACHE_OFF_NO_THREAD_SLOT) |
                  (FM5_THREAD_CACHES_BY_DEFAULT ? 0 : FM5_CACHE_OFF_BY_SETTING);
    update_epoch_locked();
    fm5_unlock(&record_lock);
}

void fm5_thread_cache_shut_down(void)
{
    fm5_os_thread_slot_destroy();
}
