/* The release engine: dispatch on the size (GetMem) or on what the block is (FreeMem, ReallocMem), and
 * FastMM5's reallocation rules. */
#include "blocks/release_engine.h"
#include "blocks/realloc_rules.h"
#include "blocks/recycling.h"
#include "base/events.h"
#include "base/memory_usage.h"
#include <string.h>

void *fm5_release_get_mem(size_t size)
{
    return fm5_release_get_mem_inline(size);
}

void *fm5_release_get_large_block(size_t size)
{
    /* The kept spans give way before the usage limit is reached (which would report an event and use
     * up its one grace), and after a refusal by the OS. */
    size_t limit = fm5_memory_limit();
    if (FM5_UNLIKELY(limit != 0) && fm5_medium_kept_span_bytes() && fm5_memory_usage() + size > limit)
        fm5_medium_release_kept_spans(1);
    void *p = fm5_large_get_mem(size);
    if (FM5_UNLIKELY(!p) && fm5_medium_kept_span_bytes()) {
        fm5_medium_release_kept_spans(1);
        p = fm5_large_get_mem(size);
    }
    return p;
}

int fm5_release_free_block(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts)
{
    switch (identity) {
    case FM5_LIVE_SMALL_BLOCK:
        return fm5_thread_cache_free(p, facts->owner);
    case FM5_LIVE_MEDIUM_BLOCK:
        return fm5_medium_free(p);
    case FM5_LIVE_LARGE_BLOCK:
        return fm5_large_free(p);
    default:
        return -1;
    }
}

int fm5_release_free_mem(void *p)
{
    fm5_block_facts facts;
    enum fm5_block_identity identity = fm5_identify_outer_block(p, &facts);
    if (fm5_release_free_block(p, identity, &facts) != 0) {
        fm5_event_report(FastMM_EventInvalidFree, p, 0, "an internal block could not be released");
        return -1;
    }
    return 0;
}

/* Moves the block: the old one is released only once the new one exists. */
static void *move_block(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts,
                        size_t new_size, size_t preferred_size, size_t bytes_to_copy)
{
    size_t obtained_size = preferred_size;
    void *q = fm5_release_get_mem_inline(preferred_size);
    if (!q && preferred_size != new_size) {
        obtained_size = new_size;
        q = fm5_release_get_mem_inline(new_size);
    }
    if (!q)
        return NULL;
    memcpy(q, p, bytes_to_copy);
    fm5_release_free_block(p, identity, facts);
    /* A large block records the size asked for, not the growth allowance. */
    if (obtained_size > FM5_MAXIMUM_MEDIUM_USER_SIZE)
        fm5_large_header_of(q)->user_size = new_size;
    return q;
}

void *fm5_release_realloc_small_block(void *p, size_t new_size, fm5_small_span *span)
{
    size_t available = (size_t)span->manager->block_size - FM5_SMALL_HEADER_SIZE;
    if (fm5_small_realloc_stays(new_size, available))
        return p;
    fm5_block_facts facts = { span, NULL, FM5_NOT_A_BLOCK, NULL };
    return move_block(p, FM5_LIVE_SMALL_BLOCK, &facts, new_size, new_size, new_size < available ? new_size : available);
}

void *fm5_release_realloc_block(void *p, enum fm5_block_identity identity, const fm5_block_facts *facts,
                                size_t new_size)
{
    switch (identity) {
    case FM5_LIVE_SMALL_BLOCK:
        return fm5_release_realloc_small_block(p, new_size, facts->owner);
    case FM5_LIVE_MEDIUM_BLOCK: {
        if (new_size > FM5_MAXIMUM_MEDIUM_USER_SIZE)
            break;
        /* The growth may use the next block when it is free, and one this thread cached is. */
        size_t size = fm5_medium_block_size(p);
        char *next = (char *)p + size;
        if (new_size > size - FM5_MEDIUM_HEADER_SIZE && fm5_status_load(next) == FM5_STATUS_MEDIUM_CACHED)
            fm5_thread_cache_give_back_medium(next);
        void *resized = fm5_medium_resize(p, new_size);
        if (resized)
            return resized;
        break;
    }
    case FM5_LIVE_LARGE_BLOCK:
        if (fm5_large_resize_in_place(p, new_size))
            return p;
        break;
    default:
        return NULL;
    }
    size_t available = fm5_live_block_usable_size(p, identity, facts);
    if (new_size > available) {
        /* Grow by a quarter at least, so that a block grown step by step moves rarely. */
        size_t preferred = available + available / 4;
        return move_block(p, identity, facts, new_size, preferred > new_size ? preferred : new_size, available);
    }
    return move_block(p, identity, facts, new_size, new_size, new_size);
}

void fm5_release_requeue_quarantine(void)
{
    char *block = fm5_recycling_take_quarantine();
    while (block) {
        char *next = *(char **)block;
        int requeued = (*fm5_status_word(block) & FM5_STATUS_SMALL) ? fm5_small_requeue_quarantined(block)
                                                                    : fm5_medium_requeue_quarantined(block);
        if (!requeued)
            fm5_recycling_quarantine(block);
        block = next;
    }
}

int fm5_release_recycle_freed_debug_blocks(uint32_t timeout_ms)
{
    /* Small first: a released span is a medium block freed, which its freed debug neighbours then
     * merge with. */
    int small = fm5_small_release_empty_spans(timeout_ms);
    int medium = fm5_medium_recycle_freed_debug_blocks(timeout_ms);
    return small && medium;
}

int fm5_release_process_pending_frees(void)
{
    /* Small first: releasing a small block can free its span into the medium manager. */
    int small = fm5_small_process_pending_frees(0);
    int medium = fm5_medium_process_pending_frees(0);
    int large = fm5_large_process_pending_frees(0);
    return small && medium && large;
}
